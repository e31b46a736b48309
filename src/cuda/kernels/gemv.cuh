// Matrix-vector products for matmuls with few rows (LLM decode: m = 1 token):
//   C[b][r][j] = sum_k A[b][r][k] * B[b][j][k]  (+ bias[j]) (ReLU),  r < m <= kLumGemvMaxM,
// with B's rows contiguous along k (a Linear weight [n, k]). The weights are read once from DRAM,
// so the kernel is bandwidth-bound when enough bytes are in flight: a block of kLumGemvWarps warps
// serves kLumGemvWarps / S columns, each column's k range split over S warps (S = `splits`, chosen
// by the runtime so that small-n projections still fill the GPU), each lane keeping U (LOADS)
// 16-byte weight loads in flight (L1 bypassed: they are read once) before using any; the S slices'
// sums meet in shared memory. One float accumulator per row of A.
// Requires k, lda, ldb multiples of the vector width and 16-byte aligned pointers (checked by the
// runtime, which uses cuBLASLt otherwise).
#pragma once

#include "common.cuh"

/// The most rows of A one launch serves (one float accumulator per row and lane).
constexpr int kLumGemvMaxM = 8;
/// Warps per block (the runtime's kGemvBlock / 32).
constexpr int kLumGemvWarps = 8;

/// 16 bytes of weights that no other thread reads: not kept in L1 (A's rows are).
__device__ __forceinline__ uint4 lum_gemv_stream(const void* p) {
  uint4 v;
  asm volatile("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
               : "l"(p));
  return v;
}

/// f32 elements: 4 per 16-byte vector.
struct LumGemvF32 {
  using Storage = float;
  static constexpr int kVec = 4;
  __device__ __forceinline__ static void load(const float* p, float* out) {
    const float4 v = __ldg(reinterpret_cast<const float4*>(p));
    out[0] = v.x, out[1] = v.y, out[2] = v.z, out[3] = v.w;
  }
  __device__ __forceinline__ static void unpack(uint4 v, float* out) {
    out[0] = __uint_as_float(v.x), out[1] = __uint_as_float(v.y);
    out[2] = __uint_as_float(v.z), out[3] = __uint_as_float(v.w);
  }
  __device__ __forceinline__ static float from_float(float v) { return v; }
  __device__ __forceinline__ static float to_float(float v) { return v; }
};

/// Unpacks 8 16-bit floats from a 16-byte vector with `cvt` (f16 or bf16 bits -> float).
template <float (*Cvt)(unsigned short)>
__device__ __forceinline__ void lum_gemv_unpack16(uint4 v, float* out) {
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
    unpack(__ldg(reinterpret_cast<const uint4*>(p)), out);
  }
  __device__ __forceinline__ static void unpack(uint4 v, float* out) {
    lum_gemv_unpack16<lum_bf16_to_f32>(v, out);
  }
  __device__ __forceinline__ static unsigned short from_float(float v) {
    return lum_f32_to_bf16(v);
  }
  __device__ __forceinline__ static float to_float(unsigned short v) { return lum_bf16_to_f32(v); }
};

/// f16 elements (raw 16-bit words): 8 per vector.
struct LumGemvF16 {
  using Storage = unsigned short;
  static constexpr int kVec = 8;
  __device__ __forceinline__ static void load(const unsigned short* p, float* out) {
    unpack(__ldg(reinterpret_cast<const uint4*>(p)), out);
  }
  __device__ __forceinline__ static void unpack(uint4 v, float* out) {
    lum_gemv_unpack16<lum_f16_to_f32>(v, out);
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

/// Block `block` of batch `batch` of the product (see the file comment): grid
/// (ceil(n / (kLumGemvWarps / splits)), batch), block kLumGemvWarps * 32; C is [batch][m][n]
/// contiguous; bias is null or [n]; residual is null or like C: then C = round(round(A B) + R),
/// the graph's Add after the product done here. The caller guarantees m <= kLumGemvMaxM and
/// splits in {1, 2, 4, 8}.
template <class D, int LOADS>
__device__ __forceinline__ void lum_gemv_block(
    const typename D::Storage* __restrict__ a, const typename D::Storage* __restrict__ b,
    typename D::Storage* __restrict__ c, const typename D::Storage* __restrict__ bias, long long m,
    long long n, long long k, long long lda, long long ldb, long long a_batch, long long b_batch,
    long long relu, long long splits, long long block, long long batch,
    const typename D::Storage* __restrict__ residual) {
  constexpr int V = D::kVec, U = LOADS;
  __shared__ float sums[kLumGemvWarps][kLumGemvMaxM];
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  const int S = static_cast<int>(splits), slice = warp % S;
  const long long j = block * (kLumGemvWarps / S) + warp / S;
  const bool live = j < n;  // no early return: the block meets at a barrier below
  a += batch * a_batch;
  const typename D::Storage* brow = b + batch * b_batch + (live ? j : 0) * ldb;
  const int rows = static_cast<int>(m);
  float acc[kLumGemvMaxM];
#pragma unroll
  for (int r = 0; r < kLumGemvMaxM; ++r) acc[r] = 0.f;
  // This warp's slice of B's row, in 16-byte vectors; lane l takes vectors v0 + l, + 32, ...
  const long long nv = k / V, per = (nv + S - 1) / S;
  const long long v0 = slice * per, v1 = v0 + per < nv ? v0 + per : nv;
  for (long long v = v0 + lane; live && v < v1; v += 32 * U) {
    uint4 w[U];
#pragma unroll
    for (int u = 0; u < U; ++u)
      if (v + u * 32 < v1) w[u] = lum_gemv_stream(brow + (v + u * 32) * V);
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (v + u * 32 >= v1) break;
      float wf[V];
      D::unpack(w[u], wf);
      lum_gemv_fma<D>(a, lda, (v + u * 32) * V, rows, wf, acc);
    }
  }
#pragma unroll
  for (int r = 0; r < kLumGemvMaxM; ++r) {
    if (r >= rows) break;
    float s = acc[r];
    for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
    if (lane == 0) sums[warp][r] = s;
  }
  __syncthreads();
  // The column's first warp: lane r finishes row r.
  if (!live || slice != 0 || lane >= rows) return;
  float s = 0.f;
  for (int i = 0; i < S; ++i) s += sums[warp + i][lane];
  if (bias != nullptr) s += D::to_float(bias[j]);
  if (relu != 0 && !(s > 0.f)) s = (s != s) ? s : 0.f;
  const long long at = batch * m * n + lane * n + j;
  if (residual != nullptr) s = D::to_float(D::from_float(s)) + D::to_float(residual[at]);
  c[at] = D::from_float(s);
}

/// The product over the launch's grid (blockIdx.x = column block, blockIdx.y = batch).
template <class D, int LOADS>
__device__ __forceinline__ void lum_gemv(const typename D::Storage* a, const typename D::Storage* b,
                                         typename D::Storage* c, const typename D::Storage* bias,
                                         long long m, long long n, long long k, long long lda,
                                         long long ldb, long long a_batch, long long b_batch,
                                         long long relu, long long splits,
                                         const typename D::Storage* residual) {
  lum_gemv_block<D, LOADS>(a, b, c, bias, m, n, k, lda, ldb, a_batch, b_batch, relu, splits,
                           blockIdx.x, blockIdx.y, residual);
}

/// One of the products of a grouped launch: B, C, n, ldb, splits and its block count.
struct LumGemvPart {
  const void* b;
  void* c;
  long long n, ldb, splits, blocks;
};

/// Up to three products of the same A (Llama's q, k and v projections; gate and up) in one
/// launch: blockIdx.x runs over the first part's blocks, then the second's, then the third's.
/// No bias, no ReLU, batch 1 (the runtime groups only such products).
template <class D, int LOADS>
__device__ __forceinline__ void lum_gemv_group(const typename D::Storage* a, long long m,
                                               long long k, long long lda, LumGemvPart p0,
                                               LumGemvPart p1, LumGemvPart p2) {
  using S = typename D::Storage;
  long long block = blockIdx.x;
  const LumGemvPart* p = &p0;
  if (block >= p0.blocks) {
    block -= p0.blocks;
    p = &p1;
    if (block >= p1.blocks) block -= p1.blocks, p = &p2;
  }
  lum_gemv_block<D, LOADS>(a, static_cast<const S*>(p->b), static_cast<S*>(p->c), nullptr, m, p->n,
                           k, lda, p->ldb, 0, 0, 0, p->splits, block, 0, nullptr);
}
