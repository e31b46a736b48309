// Warp and block reductions for the generated reduction kernels (a warp or a block per output).
// Ops are functors so one template serves sum and max for float, double and int64 accumulators.
#pragma once

#include "common.cuh"

/// a + b (wrapping for int64).
struct LumSum {
  __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
  __device__ __forceinline__ double operator()(double a, double b) const { return a + b; }
  __device__ __forceinline__ long long operator()(long long a, long long b) const {
    return lum_add_ll(a, b);
  }
};

/// NaN-propagating max.
struct LumMax {
  template <class T>
  __device__ __forceinline__ T operator()(T a, T b) const { return lum_max_nan(a, b); }
};

/// Combines v across the 32 lanes of a full warp (butterfly: every lane gets the result).
template <class Op, class T>
__device__ __forceinline__ T lum_warp_reduce(T v, Op op) {
  for (int o = 16; o > 0; o >>= 1) v = op(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Combines v across the block (blockDim.x a multiple of 32, at most 1024); every thread gets the
/// result. `smem` holds 32 values of T; the block must call this uniformly.
template <class Op, class T>
__device__ __forceinline__ T lum_block_reduce(T v, Op op, T* smem) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = lum_warp_reduce(v, op);
  if (lane == 0) smem[warp] = v;
  __syncthreads();
  if (warp == 0) {
    // Lanes past the last warp act as the identity (their steps are skipped), so no per-op
    // identity value is needed and any warp count works.
    T w = smem[lane < warps ? lane : 0];
    for (int o = 16; o > 0; o >>= 1) {
      T other = __shfl_xor_sync(0xffffffffu, w, o);
      if ((lane ^ o) < warps && lane < warps) w = op(w, other);
    }
    if (lane == 0) smem[0] = w;
  }
  __syncthreads();
  return smem[0];
}
