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

// ---- online softmax: a running (max m, sum s of exp2((x - m) * c)) pair ----

/// exp2 for float and double accumulators.
__device__ __forceinline__ float lum_exp2(float x) { return exp2f(x); }
/// Double version of lum_exp2.
__device__ __forceinline__ double lum_exp2(double x) { return exp2(x); }

/// Factor that moves a sum taken relative to max `from` to max `to` (1 when equal, even at -inf).
template <class T>
__device__ __forceinline__ T lum_rescale(T from, T to, T c) {
  return from == to ? T(1) : lum_exp2((from - to) * c);
}

/// Adds element x to the running pair (m, s). While m is -inf, s counts the -inf elements; the
/// first finite max rescales that count by exp2(-inf) = 0, as a two-pass softmax would give.
template <class T>
__device__ __forceinline__ void lum_online_add(T& m, T& s, T x, T c) {
  const T mn = lum_max_nan(m, x);
  s = s * lum_rescale(m, mn, c) + lum_rescale(x, mn, c);
  m = mn;
}

/// The final sum: NaN when every element was -inf (two-pass: exp2((-inf - -inf) * c)).
template <class T>
__device__ __forceinline__ T lum_online_sum(T m, T s) {
  return (isinf(m) && m < T(0)) ? s * (m - m) : s;  // -inf - -inf is NaN
}

/// Merges pair (m2, s2) into (m, s).
template <class T>
__device__ __forceinline__ void lum_online_merge(T& m, T& s, T m2, T s2, T c) {
  const T mn = lum_max_nan(m, m2);
  s = s * lum_rescale(m, mn, c) + s2 * lum_rescale(m2, mn, c);
  m = mn;
}

/// Merges the pairs of a full warp; every lane gets the result.
template <class T>
__device__ __forceinline__ void lum_warp_online(T& m, T& s, T c) {
  for (int o = 16; o > 0; o >>= 1) {
    const T m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    lum_online_merge(m, s, m2, s2, c);
  }
}

/// Merges the pairs of the block (blockDim.x a multiple of 32); every thread gets the result.
/// `sm` and `ss` hold 32 values each; the block must call this uniformly.
template <class T>
__device__ __forceinline__ void lum_block_online(T& m, T& s, T c, T* sm, T* ss) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  lum_warp_online(m, s, c);
  if (lane == 0) {
    sm[warp] = m;
    ss[warp] = s;
  }
  __syncthreads();
  if (warp == 0) {
    T wm = sm[lane < warps ? lane : 0], ws = ss[lane < warps ? lane : 0];
    for (int o = 16; o > 0; o >>= 1) {  // lanes past the last warp are skipped, as in lum_block_reduce
      const T m2 = __shfl_xor_sync(0xffffffffu, wm, o), s2 = __shfl_xor_sync(0xffffffffu, ws, o);
      if ((lane ^ o) < warps && lane < warps) lum_online_merge(wm, ws, m2, s2, c);
    }
    if (lane == 0) {
      sm[0] = wm;
      ss[0] = ws;
    }
  }
  __syncthreads();
  m = sm[0];
  s = ss[0];
}
