// Row-wise e4m3 quantization: the kernel's launch and its host emulation.
#include "cuda/runtime/fp8.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace luminal::cuda {

std::string fp8_quantize_source() { return "#include \"fp8_quantize.cuh\"\n"; }

Launch fp8_quantize_launch(CUfunction fn, CUdeviceptr x, CUdeviceptr q, CUdeviceptr scale,
                           int64_t rows, int64_t cols, int64_t ld) {
  Launch l;
  l.fn = fn;
  l.grid[0] = static_cast<unsigned>((rows + kFp8RowsPerBlock - 1) / kFp8RowsPerBlock);
  l.block[0] = 32 * kFp8RowsPerBlock;
  l.values = {x, q, scale, static_cast<unsigned long long>(rows),
              static_cast<unsigned long long>(cols), static_cast<unsigned long long>(ld)};
  for (unsigned long long& v : l.values) l.params.push_back(&v);
  return l;
}

uint8_t e4m3_from_float(float f) {
  const uint8_t sign = std::signbit(f) ? 0x80 : 0x00;
  if (std::isnan(f)) return sign | 0x7F;
  const float a = std::fabs(f);
  if (a >= 448.0f) return sign | 0x7E;  // saturate (448 is the largest finite value)
  // Below 2^-6 the values are m * 2^-9 (m = 0..7); m = 8 is the smallest normal, code 0x08.
  if (a < 0x1p-6f) return sign | static_cast<uint8_t>(std::nearbyint(a * 512.0f));
  int e = 0;
  const float frac = std::frexp(a, &e);  // a = frac * 2^e, frac in [0.5, 1)
  int exp = e - 1;                        // a = (2 * frac) * 2^exp, 2 * frac in [1, 2)
  int mant = static_cast<int>(std::nearbyint((2.0f * frac - 1.0f) * 8.0f));  // exact, then RNE
  if (mant == 8) {
    mant = 0;
    exp += 1;
  }
  return sign | static_cast<uint8_t>(((exp + 7) << 3) | mant);
}

float e4m3_to_float(uint8_t q) {
  const float sign = (q & 0x80) ? -1.0f : 1.0f;
  const int exp = (q >> 3) & 0xF, mant = q & 0x7;
  if (exp == 0xF && mant == 0x7) return std::nanf("");
  if (exp == 0) return sign * std::ldexp(float(mant), -9);
  return sign * std::ldexp(1.0f + float(mant) / 8.0f, exp - 7);
}

float fp8_quantize_row(const uint16_t* x, int64_t cols, uint8_t* q) {
  auto value = [&](int64_t i) {
    const uint32_t bits = uint32_t(x[i]) << 16;
    float v;
    std::memcpy(&v, &bits, 4);
    return v;
  };
  float amax = 0.0f;
  for (int64_t i = 0; i < cols; ++i) amax = std::fmax(amax, std::fabs(value(i)));  // NaN skipped
  const float inv = amax > 0.0f ? 448.0f / amax : 1.0f;
  for (int64_t i = 0; i < cols; ++i) q[i] = e4m3_from_float(value(i) * inv);
  return amax > 0.0f ? amax / 448.0f : 1.0f;
}

}  // namespace luminal::cuda
