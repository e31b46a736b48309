#include "cpu/host_gemv.h"

#include <algorithm>
#include <vector>

#include "custom/host_kernel_util.h"

namespace luminal::cpu {

namespace {

using custom::host::bf16_to_f32;

// Rows a thread takes at a time: four share each load of x.
constexpr int64_t kRows = 4;

template <class W>
[[gnu::always_inline]] inline float weight(const W* w, int64_t i) {
  if constexpr (std::is_same_v<W, uint16_t>) return bf16_to_f32(w[i]);
  else return w[i];
}

// Dots of rows [j0, j1) with x (fp32), into out[j - j0].
template <class W>
[[gnu::always_inline]] inline void dots(const float* x, const W* w, int64_t ldw, int64_t k, int64_t j0,
                                        int64_t j1, float* out) {
  int64_t j = j0;
  for (; j + kRows <= j1; j += kRows) {
    const W *w0 = w + j * ldw, *w1 = w0 + ldw, *w2 = w1 + ldw, *w3 = w2 + ldw;
    float s0 = 0, s1 = 0, s2 = 0, s3 = 0;
#pragma omp simd reduction(+ : s0, s1, s2, s3)
    for (int64_t i = 0; i < k; ++i) {
      const float v = x[i];
      s0 += v * weight(w0, i), s1 += v * weight(w1, i), s2 += v * weight(w2, i), s3 += v * weight(w3, i);
    }
    out[j - j0] = s0, out[j - j0 + 1] = s1, out[j - j0 + 2] = s2, out[j - j0 + 3] = s3;
  }
  for (; j < j1; ++j) {
    const W* wr = w + j * ldw;
    float s = 0;
#pragma omp simd reduction(+ : s)
    for (int64_t i = 0; i < k; ++i) s += x[i] * weight(wr, i);
    out[j - j0] = s;
  }
}

LUMINAL_HOST_CLONES void dots_bf16(const float* x, const uint16_t* w, int64_t ldw, int64_t k, int64_t j0,
                                   int64_t j1, float* out) {
  dots(x, w, ldw, k, j0, j1, out);
}

LUMINAL_HOST_CLONES void dots_f32(const float* x, const float* w, int64_t ldw, int64_t k, int64_t j0,
                                  int64_t j1, float* out) {
  dots(x, w, ldw, k, j0, j1, out);
}

float load(DType dt, const std::byte* p, int64_t i) {
  if (dt == DType::BF16) return bf16_to_f32(reinterpret_cast<const uint16_t*>(p)[i]);
  return reinterpret_cast<const float*>(p)[i];
}

}  // namespace

bool gemv_supports(DType dt, DType bias_dt) {
  return (dt == DType::F32 || dt == DType::BF16) && (bias_dt == dt || bias_dt == DType::F32);
}

void gemv(DType dt, const std::byte* x, const std::byte* w, int64_t ldw, int64_t n, int64_t k,
          std::byte* y, const std::byte* bias, DType bias_dt, bool relu) {
  static thread_local std::vector<float> xf;  // x in fp32, kept between calls (no allocation per step)
  xf.resize(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) xf[size_t(i)] = load(dt, x, i);
  const float* xp = xf.data();  // the calling thread's buffer: OpenMP's workers have their own xf
  // Blocks of 64 rows (a few KiB of output each); small matmuls stay on the calling thread.
  constexpr int64_t kBlock = 64;
  const int64_t blocks = (n + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (n * k > (1 << 16))
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t j0 = blk * kBlock, j1 = std::min(n, j0 + kBlock);
    float out[kBlock];
    if (dt == DType::BF16) {
      dots_bf16(xp, reinterpret_cast<const uint16_t*>(w), ldw, k, j0, j1, out);
    } else {
      dots_f32(xp, reinterpret_cast<const float*>(w), ldw, k, j0, j1, out);
    }
    for (int64_t j = j0; j < j1; ++j) {
      float v = out[j - j0];
      if (bias != nullptr) {
        v = dt == DType::BF16 ? bf16_to_f32(custom::host::f32_to_bf16(v)) : v;  // the matmul's own rounding
        v += load(bias_dt, bias, j);
      }
      if (relu && v < 0) v = 0;
      if (dt == DType::BF16) {
        reinterpret_cast<uint16_t*>(y)[j] = custom::host::f32_to_bf16(v);
      } else {
        reinterpret_cast<float*>(y)[j] = v;
      }
    }
  }
}

}  // namespace luminal::cpu
