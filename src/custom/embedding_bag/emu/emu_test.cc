// Host emulation of embedding_bag.cuh (run.sh builds and runs it): the CUDA builtins it uses as
// host functions, every thread of emit.cpp's grid run in turn (the kernel has no barriers or
// warp collectives, so order does not matter). Checks the index math, chunking, vector packing,
// alignment fallback, clamping, NaN bags and error bits; not speed or the memory model.
#include <cmath>
#include <cstdio>
#include <cstring>

#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
struct uint4 {
  unsigned x, y, z, w;
};
struct uint2 {
  unsigned x, y;
};
struct float2 {
  float x, y;
};
inline float2 make_float2(float x, float y) { return {x, y}; }
struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline Dim3 threadIdx, blockIdx, blockDim;
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
inline int atomicOr(int* p, int v) {
  const int o = *p;
  *p |= v;
  return o;
}

#include "custom/embedding_bag/test_util.h"
#include "embedding_bag.cuh"

namespace luminal {
namespace {

using embedding_bag::Elem;

constexpr DType dtype_of(Elem e) {
  return e == Elem::F32 ? DType::F32 : (e == Elem::BF16 ? DType::BF16 : DType::F16);
}

// Runs the kernel's grid over the inputs; returns the error word.
template <Elem ET, typename I, int D, bool MEAN>
int launch(const CustomKernel& k, const void* t, const I* idx, const I* off, void* out, int64_t nt,
           int64_t ni, int64_t no, const void* w) {
  constexpr int VEC = [] {
    for (int v = 16 / embedding_bag::esize<ET>(); v > 1; v /= 2)
      if (D % v == 0) return v;
    return 1;
  }();
  int err = 0;
  blockDim = {k.block[0], k.block[1], 1};
  for (unsigned by = 0; by < k.grid[1]; ++by)
    for (unsigned bx = 0; bx < k.grid[0]; ++bx)
      for (unsigned ty = 0; ty < k.block[1]; ++ty)
        for (unsigned tx = 0; tx < k.block[0]; ++tx) {
          blockIdx = {bx, by, 0};
          threadIdx = {tx, ty, 0};
          if (w != nullptr)
            embedding_bag::run<ET, I, D, VEC, MEAN, false, true>(t, idx, off, out, &err, nt, ni, no, w);
          else
            embedding_bag::run<ET, I, D, VEC, MEAN>(t, idx, off, out, &err, nt, ni, no);
        }
  return err;
}

// One case with table and output `shift` bytes past 16-byte alignment; 0 when it matches the
// oracle, the expected error word, and writes nothing outside the output.
template <Elem ET, typename I, int D, bool MEAN>
int check(const bag_test::Case& c, int shift, int want_err) {
  constexpr DType dt = dtype_of(ET);
  constexpr int es = embedding_bag::esize<ET>();
  std::vector<unsigned char> tb(c.table.size() * es + 64),
      ob(size_t(c.batch() * D * es + 64), 0xff);
  unsigned char* t = tb.data() + 16 + shift;
  unsigned char* o = ob.data() + 16 + shift;
  const auto put = [&](unsigned char* p, const std::vector<float>& v) {
    for (size_t i = 0; i < v.size(); ++i) {
      const unsigned short h = dt == DType::BF16 ? f32_to_bf16_bits(v[i]) : f32_to_f16_bits(v[i]);
      if (es == 4)
        std::memcpy(p + 4 * i, &v[i], 4);
      else
        std::memcpy(p + 2 * i, &h, 2);
    }
  };
  put(t, c.table);
  std::vector<unsigned char> wb(c.weights.size() * es);
  put(wb.data(), c.weights);
  const std::vector<I> idx(c.indices.begin(), c.indices.end()),
      off(c.offsets.begin(), c.offsets.end());
  const bool weighted = !c.weights.empty();
  const CustomKernel k = custom::emit_embedding_bag(D, dt, c.index_dtype, c.mode, c.batch(), false, weighted);
  const int err = launch<ET, I, D, MEAN>(k, t, idx.data(), off.data(), o, c.rows * D, int64_t(idx.size()),
                                         int64_t(off.size()), weighted ? wb.data() : nullptr);
  std::vector<float> got(size_t(c.batch() * D));
  for (size_t i = 0; i < got.size(); ++i) {
    unsigned short h;
    std::memcpy(&h, o + 2 * i, 2);
    if (es == 4)
      std::memcpy(&got[i], o + 4 * i, 4);
    else
      got[i] = dt == DType::BF16 ? lum_bf16_to_f32(h) : f16_bits_to_f32(h);
  }
  const size_t end = 16 + size_t(shift) + got.size() * es;
  for (size_t i = 0; i < ob.size(); ++i)
    if ((i < 16 + size_t(shift) || i >= end) && ob[i] != 0xff) {
      std::printf("FAIL %s shift %d: byte %zu outside the output written\n", c.describe().c_str(),
                  shift, i);
      return 1;
    }
  const std::string m = bag_test::mismatch(got, bag_test::loops(c), dt == DType::F32 ? 1e-5 : 1e-2,
                                           bag_test::rtol_of(dt));
  if (m.empty() && err == want_err) return 0;
  std::printf("FAIL %s shift %d: %s error %d, want %d\n", c.describe().c_str(), shift, m.c_str(),
              err, want_err);
  return 1;
}

// Good, misaligned and bad cases at several batches.
template <Elem ET, typename I, int D, bool MEAN>
int cases(uint32_t& seed) {
  const DType it = sizeof(I) == 8 ? DType::I64 : DType::I32;
  const nn::BagMode mode = MEAN ? nn::BagMode::Mean : nn::BagMode::Sum;
  int f = 0;
  for (int64_t B : {1, 2, 37, 300}) {
    const bag_test::Case good = bag_test::random_case(50, D, B, mode, dtype_of(ET), it, seed++, 9);
    f += check<ET, I, D, MEAN>(good, 0, 0);
    f += check<ET, I, D, MEAN>(good, 2, 0);  // element- but not vector-aligned: scalar path
    if (!MEAN) {  // per-sample weights (sum mode only)
      f += check<ET, I, D, MEAN>(bag_test::weighted(good, seed), 0, 0);
      f += check<ET, I, D, MEAN>(bag_test::weighted(good, seed++), 2, 0);
    }
    bag_test::Case c = good;
    c.indices.push_back(50);
    f += check<ET, I, D, MEAN>(c, 0, 1);
    c = good;
    c.indices.push_back(-3);
    f += check<ET, I, D, MEAN>(c, 0, 1);
    if (B < 3) continue;
    c = good;
    c.offsets[size_t(B - 1)] = int64_t(good.indices.size()) + 1;
    f += check<ET, I, D, MEAN>(c, 0, 4);
    c = good;
    c.offsets[0] = -1;
    f += check<ET, I, D, MEAN>(c, 0, 4);
    c = good;
    c.offsets[1] = c.offsets[2] + 1;
    f += check<ET, I, D, MEAN>(c, 0, 4);
    c.indices[0] = 99;  // now in bag 0, which is otherwise fine: both bits
    f += check<ET, I, D, MEAN>(c, 0, 5);
  }
  return f;
}

template <Elem ET, typename I, bool MEAN>
int dims(uint32_t& s) {
  return cases<ET, I, 1, MEAN>(s) + cases<ET, I, 3, MEAN>(s) + cases<ET, I, 6, MEAN>(s) +
         cases<ET, I, 16, MEAN>(s) + cases<ET, I, 24, MEAN>(s) + cases<ET, I, 128, MEAN>(s) +
         cases<ET, I, 257, MEAN>(s) + cases<ET, I, 1024, MEAN>(s);
}

}  // namespace
}  // namespace luminal

int main() {
  using embedding_bag::Elem;
  using luminal::dims;
  uint32_t s = 1;
  const int f = dims<Elem::F32, int, false>(s) + dims<Elem::F32, long long, true>(s) +
                dims<Elem::BF16, int, true>(s) + dims<Elem::BF16, long long, false>(s) +
                dims<Elem::F16, int, false>(s) + dims<Elem::F16, long long, true>(s);
  std::printf("embedding_bag emulation: %d failures\n", f);
  return f != 0;
}
