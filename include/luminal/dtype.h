// Element types and host-side 16-bit float conversions.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace luminal {

/// Element type of a tensor. Binary ops require equal dtypes; conversions are explicit casts.
enum class DType : uint8_t { F32, F16, BF16, F64, I32, I64, I8, U8, Bool };

/// Number of dtypes; guards hand-written per-dtype tables.
inline constexpr int kDTypeCount = 9;

/// Bytes per element.
size_t dtype_size(DType dt);
/// Short lowercase name ("f32", "bf16", ...), used in errors and generated code.
std::string_view dtype_name(DType dt);
/// The dtype with this short name; throws std::invalid_argument "[dtype] unknown dtype 'x'".
DType parse_dtype(std::string_view name);
/// True for F32, F16, BF16, F64.
bool is_float(DType dt);
/// True for I32, I64, I8, U8 (Bool is neither float nor integer).
bool is_integer(DType dt);
/// The dtype for a safetensors dtype string ("F32", "BF16", "BOOL", ...), or nullopt if unsupported.
std::optional<DType> dtype_from_safetensors(std::string_view s);
/// The safetensors dtype string for a dtype.
std::string_view safetensors_name(DType dt);

/// IEEE half bits -> float.
float f16_bits_to_f32(uint16_t bits);
/// float -> IEEE half bits, round to nearest even.
uint16_t f32_to_f16_bits(float v);
/// bfloat16 bits -> float.
float bf16_bits_to_f32(uint16_t bits);
/// float -> bfloat16 bits, round to nearest even (NaN stays NaN).
uint16_t f32_to_bf16_bits(float v);

/// Host-side IEEE half value (storage only; arithmetic goes through float).
struct f16 {
  uint16_t bits = 0;
  f16() = default;
  explicit f16(float v) : bits(f32_to_f16_bits(v)) {}
  explicit operator float() const { return f16_bits_to_f32(bits); }
};

/// Host-side bfloat16 value (storage only; arithmetic goes through float).
struct bf16 {
  uint16_t bits = 0;
  bf16() = default;
  explicit bf16(float v) : bits(f32_to_bf16_bits(v)) {}
  explicit operator float() const { return bf16_bits_to_f32(bits); }
};

}  // namespace luminal
