// The CrossGemm kernel: out = x0 * (u W^T + b) + xl for 16-bit floats on tensor cores (mma.sync
// m16n8k16, fp32 accumulation), the epilogue applied to the accumulators so u W^T + b never reaches
// memory. A 128 x 128 output tile per block of 8 warps (64 x 32 each); cp.async fills a ring of
// kStages shared-memory stages while the warps multiply the oldest; ldmatrix reads the stages through
// an XOR swizzle (the eight rows of one ldmatrix land in distinct banks). Needs n and k multiples of
// 8 (16-byte rows of chunks) and 16-byte-aligned inputs; rows past M and columns past n are
// zero-filled on load and never stored. Self-contained for NVRTC (common.cuh and tensor_core.cuh).
#pragma once

#include "common.cuh"
#include "tensor_core.cuh"
#include "mma_tile.cuh"  // after tensor_core.cuh

namespace cross_gemm {

constexpr int kBM = 128, kBN = 128, kBK = 32, kStages = 4, kThreads = 256;
constexpr int kWarpsM = 2, kWarpsN = 4;                      // warp grid of a block
constexpr int kWM = kBM / kWarpsM, kWN = kBN / kWarpsN;      // 64 x 32 outputs per warp
constexpr int kMT = kWM / 16, kNT = kWN / 8;                 // m16 x n8 tiles per warp
constexpr int kRowBytes = kBK * 2;                           // one tile row: 4 chunks of 16 bytes
constexpr int kTileBytes = kBM * kRowBytes;                  // one operand's stage (kBM == kBN)
constexpr int kSharedBytes = kStages * 2 * kTileBytes;       // 64 KiB

using lum_tc::swizzled;

using lum_tc::commit;
using lum_tc::copy16;
using lum_tc::shared_address;
using lum_tc::wait_pending;

using lum_tc::from_f32;
using lum_tc::to_f32;

/// Starts the copy of k-tile kt of rows [m0, m0 + kBM) of u and [n0, n0 + kBN) of W into `stage`.
template <int N, int K>
__device__ __forceinline__ void load_stage(unsigned stage, const unsigned short* u, const unsigned short* w,
                                           long long m, long long m0, int n0, int kt) {
  constexpr int kChunks = kBM * (kBK / 8);  // per operand
  for (int i = threadIdx.x; i < kChunks; i += kThreads) {
    const int r = i / (kBK / 8), c = i % (kBK / 8), k = kt * kBK + c * 8;
    const bool a_ok = m0 + r < m && k < K, b_ok = n0 + r < N && k < K;
    copy16(stage + swizzled(r, c), a_ok ? u + (m0 + r) * K + k : u, a_ok);
    copy16(stage + kTileBytes + swizzled(r, c), b_ok ? w + (long long)(n0 + r) * K + k : w, b_ok);
  }
}

/// One block's 128 x 128 tile of out. u [m, K], w [N, K], b [N], x0 and xl [m, N], out [m, N].
template <bool F16, int N, int K>
__device__ void run(const unsigned short* __restrict__ u, const unsigned short* __restrict__ w,
                    const unsigned short* __restrict__ b, const unsigned short* __restrict__ x0,
                    const unsigned short* __restrict__ xl, unsigned short* __restrict__ out, long long m) {
  LUM_DYNAMIC_SHARED(smem, 128);
  const unsigned base = shared_address(smem);
  const int n0 = blockIdx.x * kBN;
  const long long m0 = (long long)blockIdx.y * kBM;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wm = (warp / kWarpsN) * kWM, wn = (warp % kWarpsN) * kWN;
  constexpr int KT = (K + kBK - 1) / kBK;

  float acc[kMT][kNT][4];
  for (int i = 0; i < kMT; ++i)
    for (int j = 0; j < kNT; ++j)
      for (int e = 0; e < 4; ++e) acc[i][j][e] = 0.f;

  for (int s = 0; s < kStages - 1; ++s) {
    if (s < KT) load_stage<N, K>(base + s * 2 * kTileBytes, u, w, m, m0, n0, s);
    commit();  // empty groups keep the count: group s is k-tile s
  }
  for (int kt = 0; kt < KT; ++kt) {
    wait_pending<kStages - 2>();  // k-tile kt has landed (for this thread's copies)
    __syncthreads();              // ... for every thread's; and stage (kt - 1) is free
    const int next = kt + kStages - 1;
    if (next < KT) load_stage<N, K>(base + (next % kStages) * 2 * kTileBytes, u, w, m, m0, n0, next);
    commit();
    const unsigned a_tile = base + (kt % kStages) * 2 * kTileBytes, b_tile = a_tile + kTileBytes;
    lum_tc::warp_mma_k32<F16>(acc, a_tile, b_tile, wm, wn, lane);
  }
  wait_pending<0>();  // no copy may still target shared memory when the block exits

  // Epilogue: accumulator element e of tile (i, j) is row (lane / 4) + 8 (e / 2), column 2 (lane % 4) + e % 2.
#pragma unroll
  for (int j = 0; j < kNT; ++j) {
    const int col = n0 + wn + j * 8 + 2 * (lane % 4);
    if (col >= N) continue;
    const unsigned bias = *reinterpret_cast<const unsigned*>(b + col);
    const float b0 = to_f32<F16>(bias & 0xffff), b1 = to_f32<F16>(bias >> 16);
#pragma unroll
    for (int i = 0; i < kMT; ++i)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        const long long row = m0 + wm + i * 16 + lane / 4 + 8 * h;
        if (row >= m) continue;
        const long long at = row * N + col;
        const unsigned p = *reinterpret_cast<const unsigned*>(x0 + at);
        const unsigned q = *reinterpret_cast<const unsigned*>(xl + at);
        const float o0 = to_f32<F16>(p & 0xffff) * (acc[i][j][2 * h] + b0) + to_f32<F16>(q & 0xffff);
        const float o1 = to_f32<F16>(p >> 16) * (acc[i][j][2 * h + 1] + b1) + to_f32<F16>(q >> 16);
        *reinterpret_cast<unsigned*>(out + at) = unsigned(from_f32<F16>(o0)) | (unsigned(from_f32<F16>(o1)) << 16);
      }
  }
}

}  // namespace cross_gemm
