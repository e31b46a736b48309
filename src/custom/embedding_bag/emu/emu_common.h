// Host stand-in for src/cuda/kernels/common.cuh (its 16-bit conversions are PTX asm): what
// embedding_bag.cuh and rms_norm.cuh use of it, through luminal's host conversions. Their run.sh
// copy it in as "common.cuh".
#pragma once
#include <cstring>

#include "luminal/dtype.h"

#define LUM_ERR_GATHER 1

inline float lum_bf16_to_f32(unsigned short h) {
  const unsigned u = unsigned(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float lum_f16_to_f32(unsigned short h) { return luminal::f16_bits_to_f32(h); }
inline unsigned short lum_f32_to_bf16(float f) { return luminal::f32_to_bf16_bits(f); }
inline unsigned short lum_f32_to_f16(float f) { return luminal::f32_to_f16_bits(f); }
