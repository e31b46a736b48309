// The CrossGemm kernel on Hopper (sm_90a): out = x0 * (u W^T + b) + xl with warpgroup MMA
// (wgmma.mma_async m64n128k16, fp32 accumulation, both operands read from shared memory), the
// epilogue applied to the accumulators as in cross_gemm.cuh. mma.sync reaches about a third of
// Hopper's tensor-core rate (the H100 profile in docs/benchmarks.md), which made the fused layer
// slower than cuBLASLt's GEMM plus an elementwise pass; wgmma is what cuBLASLt runs.
// A 128 x 128 output tile per block of two warpgroups (64 rows each); a stage is 64 of k: u's and
// W's 128 rows of 128 bytes, stored as wgmma's 128-byte swizzle reads them (16-byte chunk c of row r
// at chunk c ^ (r % 8)), filled by cp.async kStages - 1 stages ahead. Needs n and k multiples of 8;
// rows past M or n and columns past k are zero-filled; rows past M and columns past n never stored.
#pragma once

#include "cross_gemm.cuh"

namespace cross_gemm_sm90 {

using cross_gemm::commit;
using cross_gemm::copy16;
using cross_gemm::shared_address;

constexpr int kBM = 128, kBN = 128, kBK = 64, kStages = 3, kThreads = 256;
constexpr int kTileBytes = kBM * kBK * 2;                          // one operand's stage: 16 KiB
constexpr int kStageBytes = 2 * kTileBytes;                        // u's tile, then W's
constexpr int kSharedBytes = kStages * kStageBytes + 1024;         // + alignment slack (97 KiB)

/// A shared-memory matrix descriptor for a K-major tile of 128-byte rows in the 128-byte swizzle:
/// start address / 16, 1024 bytes between groups of 8 rows, layout type 1 (bits 62-63).
__device__ __forceinline__ unsigned long long descriptor(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(1024 >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void fence_operands() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void commit_and_wait() {
  asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}
/// Makes this thread's completed cp.async writes visible to the tensor cores' (async proxy) reads.
__device__ __forceinline__ void fence_async_proxy() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }

#define LUM_WGMMA_ACC8(i) "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), \
    "+f"(d[i + 5]), "+f"(d[i + 6]), "+f"(d[i + 7])
#define LUM_WGMMA_ACC64 LUM_WGMMA_ACC8(0), LUM_WGMMA_ACC8(8), LUM_WGMMA_ACC8(16), LUM_WGMMA_ACC8(24), \
    LUM_WGMMA_ACC8(32), LUM_WGMMA_ACC8(40), LUM_WGMMA_ACC8(48), LUM_WGMMA_ACC8(56)
#define LUM_WGMMA_REGS                                                                                   \
  "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\nwgmma.mma_async.sync.aligned.m64n128k16.f32." LUM_WGMMA_TYPE " "  \
  "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, " \
  "%22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, "  \
  "%42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, "  \
  "%62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"

/// d += A B^T for a 64 x 128 tile, k 16: A and B K-major in shared memory (descriptors a and b).
template <bool F16>
__device__ __forceinline__ void wgmma_64x128(float (&d)[64], unsigned long long a, unsigned long long b) {
  if constexpr (F16) {
#define LUM_WGMMA_TYPE "f16.f16"
    asm volatile(LUM_WGMMA_REGS : LUM_WGMMA_ACC64 : "l"(a), "l"(b), "r"(1));
#undef LUM_WGMMA_TYPE
  } else {
#define LUM_WGMMA_TYPE "bf16.bf16"
    asm volatile(LUM_WGMMA_REGS : LUM_WGMMA_ACC64 : "l"(a), "l"(b), "r"(1));
#undef LUM_WGMMA_TYPE
  }
}
#undef LUM_WGMMA_REGS
#undef LUM_WGMMA_ACC64
#undef LUM_WGMMA_ACC8

/// Starts the copy of k-tile kt of rows [m0, m0 + kBM) of u and [n0, n0 + kBN) of W into `stage`.
template <int N, int K>
__device__ __forceinline__ void load_stage(unsigned stage, const unsigned short* u, const unsigned short* w,
                                           long long m, long long m0, int n0, int kt) {
  for (int i = threadIdx.x; i < kBM * 8; i += kThreads) {
    const int r = i / 8, c = i % 8, k = kt * kBK + c * 8;
    const unsigned at = unsigned(r * 128 + ((c ^ (r % 8)) << 4));
    const bool a_ok = m0 + r < m && k < K, b_ok = n0 + r < N && k < K;
    copy16(stage + at, a_ok ? u + (m0 + r) * K + k : u, a_ok);
    copy16(stage + kTileBytes + at, b_ok ? w + (long long)(n0 + r) * K + k : w, b_ok);
  }
}

/// One block's 128 x 128 tile of out. u [m, K], w [N, K], b [N], x0 and xl [m, N], out [m, N].
template <bool F16, int N, int K>
__device__ void run(const unsigned short* __restrict__ u, const unsigned short* __restrict__ w,
                    const unsigned short* __restrict__ b, const unsigned short* __restrict__ x0,
                    const unsigned short* __restrict__ xl, unsigned short* __restrict__ out, long long m) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const unsigned base = (shared_address(smem) + 1023) & ~1023u;  // the swizzle needs 1024-byte alignment
  const int n0 = blockIdx.x * kBN;
  const long long m0 = (long long)blockIdx.y * kBM;
  const int group = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  constexpr int KT = (K + kBK - 1) / kBK;

  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.f;

  for (int s = 0; s < kStages - 1; ++s) {
    if (s < KT) load_stage<N, K>(base + s * kStageBytes, u, w, m, m0, n0, s);
    commit();  // empty groups keep the count: group s is k-tile s
  }
  for (int kt = 0; kt < KT; ++kt) {
    cross_gemm::wait_pending<kStages - 2>();  // this thread's copies of k-tile kt have landed
    fence_async_proxy();
    __syncthreads();  // every thread's have; and every warpgroup is done with stage kt - 1
    const int next = kt + kStages - 1;
    if (next < KT) load_stage<N, K>(base + (next % kStages) * kStageBytes, u, w, m, m0, n0, next);
    commit();
    const unsigned a_tile = base + (kt % kStages) * kStageBytes + group * 64 * 128, b_tile =
        base + (kt % kStages) * kStageBytes + kTileBytes;
    fence_operands();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk)  // k 16 = 32 bytes further along the swizzled rows
      wgmma_64x128<F16>(d, descriptor(a_tile + kk * 32), descriptor(b_tile + kk * 32));
    commit_and_wait();
#pragma unroll
    for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");  // no read of d before the wait
  }
  cross_gemm::wait_pending<0>();  // no copy may still target shared memory when the block exits

  // d[4j + e]: row 16 warp + lane / 4 + 8 (e / 2) of the warpgroup's 64, column 8 j + 2 (lane % 4) + e % 2.
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int col = n0 + 8 * j + 2 * (lane % 4);
    if (col >= N) continue;
    const unsigned bias = *reinterpret_cast<const unsigned*>(b + col);
    const float b0 = cross_gemm::to_f32<F16>(bias & 0xffff), b1 = cross_gemm::to_f32<F16>(bias >> 16);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const long long row = m0 + group * 64 + warp * 16 + lane / 4 + 8 * h;
      if (row >= m) continue;
      const long long at = row * N + col;
      const unsigned p = *reinterpret_cast<const unsigned*>(x0 + at);
      const unsigned q = *reinterpret_cast<const unsigned*>(xl + at);
      const float o0 = cross_gemm::to_f32<F16>(p & 0xffff) * (d[4 * j + 2 * h] + b0) + cross_gemm::to_f32<F16>(q & 0xffff);
      const float o1 = cross_gemm::to_f32<F16>(p >> 16) * (d[4 * j + 2 * h + 1] + b1) + cross_gemm::to_f32<F16>(q >> 16);
      *reinterpret_cast<unsigned*>(out + at) =
          unsigned(cross_gemm::from_f32<F16>(o0)) | (unsigned(cross_gemm::from_f32<F16>(o1)) << 16);
    }
  }
}

}  // namespace cross_gemm_sm90
