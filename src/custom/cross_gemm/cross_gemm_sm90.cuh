// The CrossGemm kernel on Hopper (sm_90a): out = x0 * (u W^T + b) + xl with warpgroup MMA
// (wgmma.mma_async m64n128k16, fp32 accumulation, both operands read from shared memory), the
// epilogue applied to the accumulators as in cross_gemm.cuh. mma.sync reaches about a third of
// Hopper's tensor-core rate (the H100 profile in docs/benchmarks.md), which made the fused layer
// slower than cuBLASLt's GEMM plus an elementwise pass; wgmma is what cuBLASLt runs.
// A BM x 128 output tile per block of BM / 64 warpgroups (64 rows each; BM 128, or 64 for small
// batches, where 128-row tiles leave SMs idle: 81 blocks at DLRM-v2's 270 rows); a stage is 64 of k:
// u's BM and W's 128 rows of 128 bytes, stored as wgmma's 128-byte swizzle reads them (16-byte
// chunk c of row r at chunk c ^ (r % 8)), filled by cp.async one or two stages ahead (run's Overlap). Needs n and k
// multiples of 8 and 16-byte-aligned inputs; rows past M or n and columns past k are zero-filled;
// rows past M and columns past n never stored.
#pragma once

#include "cross_gemm.cuh"

namespace cross_gemm_sm90 {

using cross_gemm::commit;
using cross_gemm::copy16;
using cross_gemm::shared_address;

constexpr int kBN = 128, kBK = 64;
/// Threads of a block of BM rows: a warpgroup (128) per 64 rows.
constexpr int threads(int bm) { return bm * 2; }
/// One stage: u's BM rows, then W's kBN rows, of kBK bf16 (BM 128: 32 KiB; 64: 24 KiB).
constexpr int stage_bytes(int bm) { return (bm + kBN) * kBK * 2; }
/// Shared memory of a kernel of `stages` stages: + alignment slack (3 stages: 97 KiB, 2 blocks per SM).
constexpr int shared_bytes(int stages, int bm = 128) { return stages * stage_bytes(bm) + 1024; }
// The epilogue's fp32 tile reuses the stages: rows padded by 8 floats so that the accumulator
// layout's 8 rows x 4 lanes of float2 stores fall in distinct banks.
constexpr int kPitch = kBN + 8;
static_assert(128 * kPitch * 4 <= 3 * stage_bytes(128) && 64 * kPitch * 4 <= 3 * stage_bytes(64),
              "the epilogue tile fits the stages");

/// A shared-memory matrix descriptor for a K-major tile of 128-byte rows in the 128-byte swizzle:
/// start address / 16, 1024 bytes between groups of 8 rows, layout type 1 (bits 62-63).
__device__ __forceinline__ unsigned long long descriptor(unsigned addr) {
  return (unsigned long long)((addr & 0x3FFFF) >> 4) | ((unsigned long long)(1024 >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void fence_operands() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
/// Commits this warpgroup's issued MMAs as a group; waits until at most `Pending` groups are in flight.
template <int Pending>
__device__ __forceinline__ void commit_and_wait() {
  asm volatile("wgmma.commit_group.sync.aligned;\nwgmma.wait_group.sync.aligned %0;\n" ::"n"(Pending) : "memory");
}
/// Asks L2 for the 128-byte line at p (a hint: no registers, no completion to wait for).
__device__ __forceinline__ void prefetch_l2(const void* p) { asm volatile("prefetch.global.L2 [%0];\n" ::"l"(p)); }

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

/// Starts the copy of k-tile kt of rows [m0, m0 + BM) of u and [n0, n0 + kBN) of W into `stage`
/// (u's rows first, W's at BM * 128 bytes): rows r < BM of the combined BM + kBN are u's.
template <int N, int K, int BM>
__device__ __forceinline__ void load_stage(unsigned stage, const unsigned short* u, const unsigned short* w,
                                           long long m, long long m0, int n0, int kt) {
  if constexpr (BM == kBN) {  // as measured (2026-12-07): a row of u and the same row of W per step
    for (int i = threadIdx.x; i < BM * 8; i += threads(BM)) {
      const int r = i / 8, c = i % 8, k = kt * kBK + c * 8;
      const unsigned at = unsigned(r * 128 + ((c ^ (r % 8)) << 4));
      const bool a_ok = m0 + r < m && k < K, b_ok = n0 + r < N && k < K;
      copy16(stage + at, a_ok ? u + (m0 + r) * K + k : u, a_ok);
      copy16(stage + BM * 128 + at, b_ok ? w + (long long)(n0 + r) * K + k : w, b_ok);
    }
  } else {
    for (int i = threadIdx.x; i < (BM + kBN) * 8; i += threads(BM)) {
      const int r = i / 8, c = i % 8, k = kt * kBK + c * 8;
      const unsigned at = unsigned(r * 128 + ((c ^ (r % 8)) << 4));  // BM % 8 == 0: W's rows keep the swizzle
      if (r < BM) {
        const bool ok = m0 + r < m && k < K;
        copy16(stage + at, ok ? u + (m0 + r) * K + k : u, ok);
      } else {
        const bool ok = n0 + (r - BM) < N && k < K;
        copy16(stage + at, ok ? w + (long long)(n0 + r - BM) * K + k : w, ok);
      }
    }
  }
}

/// One block's BM x 128 tile of out (BM 128 or 64). u [m, K], w [N, K], b [N], x0 and xl [m, N], out [m, N].
/// Stages k stages of shared memory; with Overlap, one k stage's MMAs are still running while the
/// next stage's are issued, so copies run Stages - 2 stages ahead (the stage being refilled is then
/// the one whose MMAs are known done); without, Stages - 1 ahead and each stage's MMAs waited for.
template <bool F16, int N, int K, int Stages, bool Overlap, int BM = 128>
__device__ void run(const unsigned short* __restrict__ u, const unsigned short* __restrict__ w,
                    const unsigned short* __restrict__ b, const unsigned short* __restrict__ x0,
                    const unsigned short* __restrict__ xl, unsigned short* __restrict__ out, long long m) {
  extern __shared__ __align__(1024) unsigned char smem[];
  const unsigned base = (shared_address(smem) + 1023) & ~1023u;  // the swizzle needs 1024-byte alignment
  const int n0 = blockIdx.x * kBN;
  static_assert(BM == 128 || BM == 64, "one or two warpgroups of 64 rows");
  constexpr int kThreads = threads(BM), kStageBytes = stage_bytes(BM), kTileBytes = BM * kBK * 2;
  const long long m0 = (long long)blockIdx.y * BM;
  const int group = threadIdx.x / 128, warp = (threadIdx.x / 32) % 4, lane = threadIdx.x % 32;
  constexpr int KT = (K + kBK - 1) / kBK;

  // The epilogue's x0 and xl tiles (64 KiB from DRAM) are wanted only after the k loop, which reads
  // u and W from L2: asking for them now lets DRAM fetch them while the tensor cores work (each of
  // the 2 x BM rows of 256 bytes is two lines; two per thread).
  for (int i = threadIdx.x; i < 2 * BM * 2; i += kThreads) {
    const int r = i / 4, half = i % 2, c = n0 + half * 64;
    const unsigned short* src = (i / 2) % 2 ? xl : x0;
    if (m0 + r < m && c < N) prefetch_l2(src + (m0 + r) * N + c);
  }

  float d[64];
#pragma unroll
  for (int i = 0; i < 64; ++i) d[i] = 0.f;

  constexpr int kAhead = Overlap ? Stages - 2 : Stages - 1;  // k stages copied ahead of the MMAs
  static_assert(kAhead >= 1, "at least one stage in flight");
  for (int s = 0; s < kAhead; ++s) {
    if (s < KT) load_stage<N, K, BM>(base + s * kStageBytes, u, w, m, m0, n0, s);
    commit();  // empty groups keep the count: group s is k-tile s
  }
  for (int kt = 0; kt < KT; ++kt) {
    cross_gemm::wait_pending<kAhead - 1>();  // this thread's copies of k-tile kt have landed
    fence_async_proxy();
    __syncthreads();  // every thread's have; and every warpgroup's MMAs of the stage refilled next are done
    const int next = kt + kAhead;
    if (next < KT) load_stage<N, K, BM>(base + (next % Stages) * kStageBytes, u, w, m, m0, n0, next);
    commit();
    const unsigned a_tile = base + (kt % Stages) * kStageBytes + group * 64 * 128, b_tile =
        base + (kt % Stages) * kStageBytes + kTileBytes;
    fence_operands();
#pragma unroll
    for (int kk = 0; kk < kBK / 16; ++kk)  // k 16 = 32 bytes further along the swizzled rows
      wgmma_64x128<F16>(d, descriptor(a_tile + kk * 32), descriptor(b_tile + kk * 32));
    commit_and_wait<Overlap ? 1 : 0>();
  }
  if constexpr (Overlap) asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");  // the last stage's MMAs
#pragma unroll
  for (int i = 0; i < 64; ++i) asm volatile("" : "+f"(d[i])::"memory");  // no read of d before the wait
  cross_gemm::wait_pending<0>();  // the (empty) trailing groups: nothing may still target the stages
  __syncthreads();                // ... and both warpgroups are done reading them

  // The epilogue goes through shared memory (the stages are free now): the accumulators as fp32
  // rows, then x0 and xl read and out written in 16-byte chunks, a warp two whole 256-byte
  // rows at a time (the accumulator layout would read and write 16 bytes of each of 8 rows).
  // d[4j + e]: row 16 warp + lane / 4 + 8 (e / 2) of the warpgroup's 64, column 8 j + 2 (lane % 4) + e % 2.
  float* tile = reinterpret_cast<float*>(smem + (base - shared_address(smem)));
#pragma unroll
  for (int j = 0; j < 16; ++j) {
    const int c = 8 * j + 2 * (lane % 4);
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = group * 64 + warp * 16 + lane / 4 + 8 * h;
      *reinterpret_cast<float2*>(tile + r * kPitch + c) = make_float2(d[4 * j + 2 * h], d[4 * j + 2 * h + 1]);
    }
  }
  __syncthreads();
  constexpr int kChunks = BM * kBN / 8 / kThreads, kBatch = 4;  // 8 chunks of 8 outputs per thread
#pragma unroll
  for (int first = 0; first < kChunks; first += kBatch) {
    uint4 p[kBatch], q[kBatch];
#pragma unroll
    for (int it = 0; it < kBatch; ++it) {  // a batch's loads first: 8 in flight per thread
      const int i = (first + it) * kThreads + threadIdx.x, r = i / (kBN / 8), c = i % (kBN / 8) * 8;
      const long long row = m0 + r, at = row * N + n0 + c;
      const bool ok = row < m && n0 + c < N;  // N % 8 == 0: a chunk is wholly in or out
      p[it] = ok ? *reinterpret_cast<const uint4*>(x0 + at) : make_uint4(0, 0, 0, 0);
      q[it] = ok ? *reinterpret_cast<const uint4*>(xl + at) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int it = 0; it < kBatch; ++it) {
      const int i = (first + it) * kThreads + threadIdx.x, r = i / (kBN / 8), c = i % (kBN / 8) * 8;
      const long long row = m0 + r, at = row * N + n0 + c;
      if (row >= m || n0 + c >= N) continue;
      const float* y = tile + r * kPitch + c;
      const uint4 bias = *reinterpret_cast<const uint4*>(b + n0 + c);  // 16-byte aligned: N % 8 == 0
      const unsigned pw[4] = {p[it].x, p[it].y, p[it].z, p[it].w}, qw[4] = {q[it].x, q[it].y, q[it].z, q[it].w};
      const unsigned bw[4] = {bias.x, bias.y, bias.z, bias.w};
      unsigned o[4];
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float y0 = y[2 * e] + cross_gemm::to_f32<F16>(bw[e] & 0xffff);
        const float y1 = y[2 * e + 1] + cross_gemm::to_f32<F16>(bw[e] >> 16);
        const float o0 = cross_gemm::to_f32<F16>(pw[e] & 0xffff) * y0 + cross_gemm::to_f32<F16>(qw[e] & 0xffff);
        const float o1 = cross_gemm::to_f32<F16>(pw[e] >> 16) * y1 + cross_gemm::to_f32<F16>(qw[e] >> 16);
        o[e] = unsigned(cross_gemm::from_f32<F16>(o0)) | (unsigned(cross_gemm::from_f32<F16>(o1)) << 16);
      }
      *reinterpret_cast<uint4*>(out + at) = make_uint4(o[0], o[1], o[2], o[3]);
    }
  }
}

}  // namespace cross_gemm_sm90
