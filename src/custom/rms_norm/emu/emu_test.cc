// Host emulation of rms_norm.cuh (run.sh builds and runs it): the CUDA builtins it uses as host
// functions, each block's threads as std::threads (__syncthreads a std::barrier; a warp shuffle
// writes every lane's value, waits, reads its partner's, waits). Checks the chunking, vector
// packing, alignment fallback, the reduction and the rounding points; not speed.
#include <barrier>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#define __device__
#define __global__
#define __forceinline__ inline
#define __shared__ static
struct uint4 {
  unsigned x, y, z, w;
};
struct uint2 {
  unsigned x, y;
};
inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) { return {x, y, z, w}; }
inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
thread_local Dim3 threadIdx, blockIdx;
template <class T>
T __ldg(const T* p) {
  return *p;
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline unsigned __float_as_uint(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float __int_as_float(int u) { return __uint_as_float(unsigned(u)); }
inline float __fadd_rn(float a, float b) { return a + b; }
inline float __fmul_rn(float a, float b) { return a * b; }
inline float __fsqrt_rn(float a) { return std::sqrt(a); }
inline float __frcp_rn(float a) { return 1.0f / a; }

std::unique_ptr<std::barrier<>> g_barrier;  // the current block's
std::vector<float> g_lanes;                 // one slot per thread of the block
inline void __syncthreads() { g_barrier->arrive_and_wait(); }
inline float __shfl_xor_sync(unsigned, float v, int o) {
  g_lanes[threadIdx.x] = v;
  __syncthreads();
  const float got = g_lanes[threadIdx.x ^ unsigned(o)];
  __syncthreads();
  return got;
}

#include "custom/rms_norm/test_util.h"
#include "rms_norm.cuh"

namespace luminal {
namespace {

using rms_norm::Elem;

// Every block of the kernel's grid, its threads concurrently.
template <Elem ET, int D>
void launch(const CustomKernel& k, const void* x, const void* w, void* out, int64_t n_x,
            float inv_d, float eps) {
  constexpr int VEC = [] {
    for (int v = 16 / rms_norm::esize<ET>(); v > 1; v /= 2)
      if (D % v == 0) return v;
    return 1;
  }();
  // emit.cpp's layout, recomputed at compile time (checked against the kernel's block below).
  constexpr int CH = D / VEC;
  constexpr int THREADS = (CH + 31) / 32 * 32 < 512 ? (CH + 31) / 32 * 32 : 512;
  constexpr int PER = (CH + THREADS - 1) / THREADS;
  if (k.block[0] != unsigned(THREADS) || k.source.find(fmt::format(", {}, {}, {}>", VEC, THREADS, PER)) == std::string::npos) {
    std::printf("layout mismatch for D %d\n%s", D, k.source.c_str());
    std::abort();
  }
  const unsigned threads = k.block[0];
  for (unsigned b = 0; b < k.grid[0]; ++b) {
    g_barrier = std::make_unique<std::barrier<>>(threads);
    g_lanes.assign(threads, 0.f);
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < threads; ++t)
      ts.emplace_back([&, b, t] {
        blockIdx = {b, 0, 0};
        threadIdx = {t, 0, 0};
        rms_norm::run<ET, D, VEC, THREADS, PER>(x, w, out, n_x, inv_d, eps);
      });
    for (std::thread& t : ts) t.join();
  }
}

template <Elem ET>
std::vector<unsigned char> to_bytes(const std::vector<float>& v) {
  std::vector<unsigned char> out(v.size() * rms_norm::esize<ET>());
  for (size_t i = 0; i < v.size(); ++i) {
    const unsigned bits = ET == Elem::F32 ? __float_as_uint(v[i])
                          : ET == Elem::BF16 ? f32_to_bf16_bits(v[i]) : f32_to_f16_bits(v[i]);
    std::memcpy(out.data() + i * rms_norm::esize<ET>(), &bits, rms_norm::esize<ET>());
  }
  return out;
}

template <Elem ET>
float from_bytes(const unsigned char* p) {
  unsigned bits = 0;
  std::memcpy(&bits, p, rms_norm::esize<ET>());
  if constexpr (ET == Elem::F32) return __uint_as_float(bits);
  if constexpr (ET == Elem::BF16) return bf16_bits_to_f32(uint16_t(bits));
  return f16_bits_to_f32(uint16_t(bits));
}

// One case with x, w and out `shift` bytes past 16-byte alignment; the number of mismatches.
template <Elem ET, int D>
int check(int64_t rows, int shift, uint32_t seed) {
  constexpr DType dt = ET == Elem::F32 ? DType::F32 : (ET == Elem::BF16 ? DType::BF16 : DType::F16);
  const norm_test::Case c = norm_test::random_case(rows, D, dt, seed);
  const CustomKernel k = custom::emit_rms_norm(D, dt, c.eps, rows);
  constexpr int es = rms_norm::esize<ET>();
  const std::vector<unsigned char> xb = to_bytes<ET>(c.x), wb = to_bytes<ET>(c.w);
  std::vector<unsigned char> xs(xb.size() + 32), ws(wb.size() + 32), os(xb.size() + 32, 0xAB);
  auto at = [shift](std::vector<unsigned char>& v) {
    unsigned char* p = v.data();
    while (reinterpret_cast<uintptr_t>(p) % 16) ++p;
    return p + shift;
  };
  std::memcpy(at(xs), xb.data(), xb.size());
  std::memcpy(at(ws), wb.data(), wb.size());
  launch<ET, D>(k, at(xs), at(ws), at(os), rows * D, float(1.0 / D), float(c.eps));
  const std::vector<double> want = norm_test::loops(c);
  const double rtol = norm_test::rtol_of(dt), atol = dt == DType::F32 ? 1e-6 : 1e-2;
  int bad = 0;
  for (int64_t i = 0; i < rows * D; ++i) {
    const float g = from_bytes<ET>(at(os) + i * es);
    if (!(std::abs(g - want[size_t(i)]) <= atol + rtol * std::abs(want[size_t(i)]))) {
      if (bad++ < 3) std::printf("  element %lld: got %g want %g\n", (long long)i, g, want[size_t(i)]);
    }
  }
  // Nothing written past the output.
  const unsigned char* end = at(os) + rows * D * es;
  for (const unsigned char* p = end; p < os.data() + os.size(); ++p) bad += *p != 0xAB;
  std::printf("%s %s D %d rows %lld shift %d\n", bad ? "FAIL" : "ok  ", std::string(dtype_name(dt)).c_str(), D,
              (long long)rows, shift);
  return bad;
}

template <Elem ET>
int all(uint32_t seed) {
  int bad = 0;
  for (int shift : {0, 2})
    for (int64_t rows : {1, 3}) {
      bad += check<ET, 2048>(rows, shift, seed++);
      bad += check<ET, 100>(rows, shift, seed++);
      bad += check<ET, 101>(rows, shift, seed++);
      bad += check<ET, 8>(rows, shift, seed++);
    }
  bad += check<ET, 4096 * (ET == Elem::F32 ? 1 : 2)>(2, 0, seed++);  // 512 threads x 2 chunks
  bad += check<ET, ET == Elem::F32 ? 16384 : 32768>(1, 0, seed++);    // 512 threads x 8 chunks
  return bad;
}

}  // namespace
}  // namespace luminal

int main() {
  using ::rms_norm::Elem;
  const int bad = luminal::all<Elem::F32>(1) + luminal::all<Elem::BF16>(100) +
                  luminal::all<Elem::F16>(200);
  std::printf(bad ? "FAILED\n" : "all passed\n");
  return bad ? 1 : 0;
}
