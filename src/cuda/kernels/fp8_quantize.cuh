// Row-wise FP8 (e4m3) quantization for the fp8 precision's GEMMs: each row of a bf16 [rows, cols]
// matrix (row stride ld) becomes e4m3 values q = x * (448 / amax) in a contiguous [rows, cols]
// byte matrix, with scale = amax / 448 so that x ~ q * scale. One warp per row; cols % 8 == 0.
// A zero row gets scale 1 and zeros. Round to nearest even, saturating at +-448; NaN stays NaN.
// Used for weights (rows = output channels, once per upload) and for activations (each call).
// Needs sm_89+ (the e4m3 conversion); common.cuh is one of the embedded headers NVRTC gets.
#pragma once

#include "common.cuh"

/// Two floats -> two e4m3 bytes (a in the low byte), round to nearest even, saturated.
__device__ __forceinline__ unsigned short lum_e4m3x2(float a, float b) {
  unsigned short r;
  // PTX puts the first source in the upper byte.
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(b), "f"(a));
  return r;
}

/// Quantizes row `row` with one warp (lane = threadIdx.x % 32).
__device__ __forceinline__ void lum_fp8_quantize_row(const unsigned short* x, long long ld,
                                                     unsigned char* q, float* scale,
                                                     long long row, long long cols) {
  const int lane = threadIdx.x & 31;
  const uint4* src = reinterpret_cast<const uint4*>(x + row * ld);  // 8 bf16 per load
  const long long vecs = cols / 8;
  float amax = 0.0f;
  for (long long v = lane; v < vecs; v += 32) {
    const uint4 p = src[v];
    const unsigned w[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      amax = fmaxf(amax, fabsf(lum_bf16_to_f32(static_cast<unsigned short>(w[i] & 0xFFFF))));
      amax = fmaxf(amax, fabsf(lum_bf16_to_f32(static_cast<unsigned short>(w[i] >> 16))));
    }
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
  // Infinity makes every finite value 0 and itself NaN: the output is non-finite, as it should be.
  const float inv = amax > 0.0f ? 448.0f / amax : 1.0f;
  if (lane == 0) scale[row] = amax > 0.0f ? amax / 448.0f : 1.0f;
  uint2* dst = reinterpret_cast<uint2*>(q + row * cols);  // 8 bytes per store
  for (long long v = lane; v < vecs; v += 32) {
    const uint4 p = src[v];  // the second read of the row hits L1 / L2
    const unsigned w[4] = {p.x, p.y, p.z, p.w};
    unsigned packed[2];
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const unsigned lo = lum_e4m3x2(lum_bf16_to_f32(static_cast<unsigned short>(w[2 * i] & 0xFFFF)) * inv,
                                     lum_bf16_to_f32(static_cast<unsigned short>(w[2 * i] >> 16)) * inv);
      const unsigned hi = lum_e4m3x2(lum_bf16_to_f32(static_cast<unsigned short>(w[2 * i + 1] & 0xFFFF)) * inv,
                                     lum_bf16_to_f32(static_cast<unsigned short>(w[2 * i + 1] >> 16)) * inv);
      packed[i] = lo | (hi << 16);
    }
    dst[v] = make_uint2(packed[0], packed[1]);
  }
}

/// The launch: blockDim.x = 32 * rows per block, grid = ceil(rows / rows per block).
extern "C" __global__ void luminal_fp8_quantize_rows(const unsigned short* x, unsigned char* q,
                                                     float* scale, long long rows, long long cols,
                                                     long long ld) {
  const long long row = static_cast<long long>(blockIdx.x) * (blockDim.x / 32) + threadIdx.x / 32;
  if (row < rows) lum_fp8_quantize_row(x, ld, q, scale, row, cols);
}
