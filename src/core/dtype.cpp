// DType tables and exact host-side f16/bf16 conversions (round to nearest even).
#include "luminal/dtype.h"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>

namespace luminal {

namespace {

struct DTypeInfo {
  size_t size;
  std::string_view name, safetensors;
};

// Indexed by DType; keep in enum order.
constexpr std::array<DTypeInfo, kDTypeCount> kInfo = {{
    {4, "f32", "F32"},
    {2, "f16", "F16"},
    {2, "bf16", "BF16"},
    {8, "f64", "F64"},
    {4, "i32", "I32"},
    {8, "i64", "I64"},
    {1, "i8", "I8"},
    {1, "u8", "U8"},
    {1, "bool", "BOOL"},
}};
static_assert(kInfo.size() == kDTypeCount, "one row per DType");

const DTypeInfo& info(DType dt) {
  auto i = static_cast<size_t>(dt);
  if (i >= kInfo.size()) throw std::invalid_argument(fmt::format("[dtype] invalid dtype {}", i));
  return kInfo[i];
}

uint32_t float_bits(float v) {
  uint32_t b;
  std::memcpy(&b, &v, 4);
  return b;
}

float bits_float(uint32_t b) {
  float v;
  std::memcpy(&v, &b, 4);
  return v;
}

// Shifts m right by s bits, rounding to nearest even on the dropped bits (s >= 1).
uint32_t shift_round_even(uint32_t m, int s) {
  if (s > 31) return 0;
  uint32_t q = m >> s, rem = m & ((1u << s) - 1), half = 1u << (s - 1);
  if (rem > half || (rem == half && (q & 1))) ++q;
  return q;
}

}  // namespace

size_t dtype_size(DType dt) { return info(dt).size; }
std::string_view dtype_name(DType dt) { return info(dt).name; }
std::string_view safetensors_name(DType dt) { return info(dt).safetensors; }

DType parse_dtype(std::string_view name) {
  for (size_t i = 0; i < kInfo.size(); ++i)
    if (kInfo[i].name == name) return static_cast<DType>(i);
  throw std::invalid_argument("[dtype] unknown dtype '" + std::string(name) + "'");
}

bool is_float(DType dt) {
  return dt == DType::F32 || dt == DType::F16 || dt == DType::BF16 || dt == DType::F64;
}

bool is_integer(DType dt) {
  return dt == DType::I32 || dt == DType::I64 || dt == DType::I8 || dt == DType::U8;
}

std::optional<DType> dtype_from_safetensors(std::string_view s) {
  for (size_t i = 0; i < kInfo.size(); ++i)
    if (kInfo[i].safetensors == s) return static_cast<DType>(i);
  return std::nullopt;
}

float f16_bits_to_f32(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
  if (exp == 0) {
    // Zero or subnormal: mant * 2^-24, exact in float.
    float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 31) return bits_float(sign | 0x7F800000u | (mant << 13));  // inf / NaN (payload kept)
  return bits_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

uint16_t f32_to_f16_bits(float v) {
  uint32_t b = float_bits(v);
  auto sign = static_cast<uint16_t>((b >> 16) & 0x8000);
  uint32_t exp = (b >> 23) & 0xFF, mant = b & 0x7FFFFF;
  if (exp == 0xFF) {
    if (mant == 0) return sign | 0x7C00;
    return sign | 0x7E00 | static_cast<uint16_t>(mant >> 13);  // quiet NaN, top payload bits
  }
  int e = static_cast<int>(exp) - 127;
  if (e > 15) return sign | 0x7C00;
  if (e >= -14) {
    // Normal half: rounding may carry into the exponent, and up to inf; both are correct.
    uint32_t h = (static_cast<uint32_t>(e + 15) << 10) | (mant >> 13);
    uint32_t rem = mant & 0x1FFF;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
    return sign | static_cast<uint16_t>(h);
  }
  if (exp == 0) return sign;  // float subnormals are far below half's smallest subnormal
  // Half subnormal: value = (mant | 2^23) * 2^(e-23), in units of 2^-24 that is >> (-e-1).
  uint32_t m = shift_round_even(mant | 0x800000u, -e - 1);
  return sign | static_cast<uint16_t>(m);
}

float bf16_bits_to_f32(uint16_t bits) { return bits_float(static_cast<uint32_t>(bits) << 16); }

uint16_t f32_to_bf16_bits(float v) {
  uint32_t b = float_bits(v);
  if ((b & 0x7F800000u) == 0x7F800000u && (b & 0x7FFFFF))
    return static_cast<uint16_t>((b >> 16) | 0x0040);  // keep NaN a (quiet) NaN
  b += 0x7FFF + ((b >> 16) & 1);
  return static_cast<uint16_t>(b >> 16);
}

}  // namespace luminal
