// The PTX building blocks of the mma.sync-era tensor-core kernels (sm_80 on): shared-memory
// addresses, cp.async copies, ldmatrix, mma.sync m16n8k16, and the gpu-scope acquire / release
// counters that persistent kernels order their work with. One header so that the host emulation
// (tests/emu/tensor_core.cuh, the same API on std::threads) can stand in for all of it and run the
// kernels on a machine without a GPU. Self-contained for NVRTC (common.cuh only).
#pragma once

#include "common.cuh"

/// The block's dynamic shared memory as `unsigned char name[]`, aligned to `align` bytes.
#define LUM_DYNAMIC_SHARED(name, align) extern __shared__ __align__(align) unsigned char name[]

namespace lum_tc {

/// A 16-bit operand (f16 when F16, else bf16) as float.
template <bool F16>
__device__ __forceinline__ float to_f32(unsigned short h) {
  if constexpr (F16) return lum_f16_to_f32(h);
  else return lum_bf16_to_f32(h);
}
/// float as a 16-bit result, rounded to nearest even.
template <bool F16>
__device__ __forceinline__ unsigned short from_f32(float f) {
  if constexpr (F16) return lum_f32_to_f16(f);
  else return lum_f32_to_bf16(f);
}

/// The shared-state-space address of a generic pointer into shared memory.
__device__ __forceinline__ unsigned shared_address(const void* p) {
  unsigned long long a;
  asm("cvta.to.shared.u64 %0, %1;" : "=l"(a) : "l"(p));
  return static_cast<unsigned>(a);
}

/// 16 bytes global -> shared through L2 (not L1: data other blocks wrote during this launch is
/// seen), without registers; zeros when !valid (src is then not read).
__device__ __forceinline__ void copy16(unsigned dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(valid ? 16 : 0));
}
/// Closes the group of copies started since the last commit.
__device__ __forceinline__ void commit() { asm volatile("cp.async.commit_group;\n" ::); }
/// Waits until at most `Pending` committed groups of this thread are still in flight.
template <int Pending>
__device__ __forceinline__ void wait_pending() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(Pending));
}

/// Four 8x8 16-bit matrices from shared memory; lane l gives row l % 8 of matrix l / 8.
__device__ __forceinline__ void ldmatrix4(unsigned (&r)[4], unsigned addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

/// c += a b for one m16n8k16 tile (A row-major, B column-major, i.e. both k-contiguous), f16 or bf16.
template <bool F16>
__device__ __forceinline__ void mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  if constexpr (F16) {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  } else {
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
                 "{%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
  }
}

/// A 16-bit word read through L2, not L1 (L1 is not coherent: another block may have rewritten it
/// during this launch since this SM cached it).
__device__ __forceinline__ unsigned short load_cg16(const unsigned short* p) {
  unsigned short v;
  asm volatile("ld.global.cg.u16 %0, [%1];\n" : "=h"(v) : "l"(p));
  return v;
}

/// load_cg16 for a float.
__device__ __forceinline__ float load_cg_f32(const float* p) {
  float v;
  asm volatile("ld.global.cg.f32 %0, [%1];\n" : "=f"(v) : "l"(p));
  return v;
}

/// *p read with gpu-scope acquire: writes released before the matching add are then visible.
__device__ __forceinline__ int load_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
  return v;
}
/// *p += v with gpu-scope release (this thread's earlier writes become visible first).
__device__ __forceinline__ void add_release(int* p, int v) {
  asm volatile("red.release.gpu.global.add.s32 [%0], %1;\n" ::"l"(p), "r"(v) : "memory");
}
/// The old *p after *p += v (relaxed, gpu scope): tickets.
__device__ __forceinline__ int fetch_add(int* p, int v) { return atomicAdd(p, v); }
/// Yields the SM's issue slots to other warps for about `ns` nanoseconds while spinning.
__device__ __forceinline__ void pause(unsigned ns) { __nanosleep(ns); }

}  // namespace lum_tc
