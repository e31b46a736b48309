// Host stand-in for src/cuda/kernels/common.cuh (its conversions are PTX asm): the 16-bit float
// conversions the tensor-core kernels use, through luminal's host conversions (round to nearest even).
#pragma once

#include <cstdint>
#include <vector>

#include "cuda_emu.h"
#include "luminal/dtype.h"

inline float lum_bf16_to_f32(unsigned short h) { return luminal::bf16_bits_to_f32(h); }
inline float lum_f16_to_f32(unsigned short h) { return luminal::f16_bits_to_f32(h); }
inline unsigned short lum_f32_to_bf16(float f) { return luminal::f32_to_bf16_bits(f); }
inline unsigned short lum_f32_to_f16(float f) { return luminal::f32_to_f16_bits(f); }

namespace emu {

/// Test data as 16-bit words (f16 when f16, else bf16).
inline std::vector<uint16_t> bits16(const std::vector<float>& v, bool f16) {
  std::vector<uint16_t> out;
  for (float x : v) out.push_back(f16 ? luminal::f32_to_f16_bits(x) : luminal::f32_to_bf16_bits(x));
  return out;
}

}  // namespace emu
