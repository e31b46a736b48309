// Matrix-vector products for matmuls with few rows (LLM decode: m = 1 token):
//   C[b][r][j] = sum_k A[b][r][k] * B[b][j][k]  (+ bias[j]) (ReLU),  r < m <= kLumGemvMaxM,
// with B's rows contiguous along k (a Linear weight [n, k]). cuBLASLt's kernels for m = 1 used
// 1-4 TB/s of the H200's 4.3 (docs/benchmarks.md); here one warp per output column j streams B's
// row j once with 16-byte loads, several in flight per lane, and keeps one float sum per row of A.
// Requires k, lda, ldb multiples of the vector width and 16-byte aligned pointers (checked by the
// runtime, which uses cuBLASLt otherwise).
#pragma once

#include "common.cuh"

/// The most rows of A one launch serves (one float accumulator per row and lane).
constexpr int kLumGemvMaxM = 8;

/// f32 elements: 4 per 16-byte vector.
struct LumGemvF32 {
  using Storage = float;
  static constexpr int kVec = 4;
  __device__ __forceinline__ static void load(const float* p, float* out) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(p));
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
  }
  __device__ __forceinline__ static float from_float(float v) { return v; }
  __device__ __forceinline__ static float to_float(float v) { return v; }
};

/// Unpacks 8 16-bit floats from a 16-byte vector with `cvt` (f16 or bf16 bits -> float).
template <float (*Cvt)(unsigned short)>
__device__ __forceinline__ void lum_gemv_unpack16(const unsigned short* p, float* out) {
  const uint4 v = __ldg(reinterpret_cast<const uint4*>(p));
  const unsigned w[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    out[2 * i] = Cvt(static_cast<unsigned short>(w[i] & 0xffffu));
    out[2 * i + 1] = Cvt(static_cast<unsigned short>(w[i] >> 16));
  }
}

/// bf16 elements (raw 16-bit words): 8 per vector.
struct LumGemvBf16 {
  using Storage = unsigned short;
  static constexpr int kVec = 8;
  __device__ __forceinline__ static void load(const unsigned short* p, float* out) {
    lum_gemv_unpack16<lum_bf16_to_f32>(p, out);
  }
  __device__ __forceinline__ static unsigned short from_float(float v) { return lum_f32_to_bf16(v); }
  __device__ __forceinline__ static float to_float(unsigned short v) { return lum_bf16_to_f32(v); }
};

/// f16 elements (raw 16-bit words): 8 per vector.
struct LumGemvF16 {
  using Storage = unsigned short;
  static constexpr int kVec = 8;
  __device__ __forceinline__ static void load(const unsigned short* p, float* out) {
    lum_gemv_unpack16<lum_f16_to_f32>(p, out);
  }
  __device__ __forceinline__ static unsigned short from_float(float v) { return lum_f32_to_f16(v); }
  __device__ __forceinline__ static float to_float(unsigned short v) { return lum_f16_to_f32(v); }
};

/// acc[r] += dot(w, A row r at column kk) for the m rows.
template <class D>
__device__ __forceinline__ void lum_gemv_fma(const typename D::Storage* a, long long lda,
                                             long long kk, int m, const float* w, float* acc) {
#pragma unroll
  for (int r = 0; r < kLumGemvMaxM; ++r) {
    if (r >= m) break;
    float x[D::kVec];
    D::load(a + r * lda + kk, x);
#pragma unroll
    for (int e = 0; e < D::kVec; ++e) acc[r] = fmaf(w[e], x[e], acc[r]);
  }
}

/// The product for blockDim.x / 32 consecutive columns per block (blockIdx.y = the batch);
/// C is [batch][m][n] contiguous; bias is null or [n]. The caller guarantees m <= kLumGemvMaxM.
template <class D>
__device__ __forceinline__ void lum_gemv(const typename D::Storage* __restrict__ a,
                                         const typename D::Storage* __restrict__ b,
                                         typename D::Storage* __restrict__ c,
                                         const typename D::Storage* __restrict__ bias,
                                         long long m, long long n, long long k, long long lda,
                                         long long ldb, long long a_batch, long long b_batch,
                                         long long relu) {
  constexpr int V = D::kVec, kUnroll = 4, kStride = 32 * V;
  const int lane = threadIdx.x & 31;
  const long long j = static_cast<long long>(blockIdx.x) * (blockDim.x >> 5) + (threadIdx.x >> 5);
  if (j >= n) return;
  const long long batch = blockIdx.y;
  a += batch * a_batch;
  b += batch * b_batch + j * ldb;
  c += batch * m * n;
  const int rows = static_cast<int>(m);
  float acc[kLumGemvMaxM];
#pragma unroll
  for (int r = 0; r < kLumGemvMaxM; ++r) acc[r] = 0.f;
  long long kk = static_cast<long long>(lane) * V;
  // kUnroll vectors of B per lane in flight before any is used: the loads are the whole cost.
  for (; kk + (kUnroll - 1) * kStride < k; kk += kUnroll * kStride) {
    float w[kUnroll][V];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) D::load(b + kk + u * kStride, w[u]);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) lum_gemv_fma<D>(a, lda, kk + u * kStride, rows, w[u], acc);
  }
  for (; kk < k; kk += kStride) {
    float w[V];
    D::load(b + kk, w);
    lum_gemv_fma<D>(a, lda, kk, rows, w, acc);
  }
#pragma unroll
  for (int r = 0; r < kLumGemvMaxM; ++r) {
    if (r >= rows) break;
    float v = acc[r];
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (lane == 0) {
      if (bias != nullptr) v += D::to_float(bias[j]);
      if (relu != 0 && !(v > 0.f)) v = (v != v) ? v : 0.f;
      c[r * n + j] = D::from_float(v);
    }
  }
}
