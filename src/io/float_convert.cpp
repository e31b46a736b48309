// Float dtype conversion for checkpoint loading.
#include "io/float_convert.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <stdexcept>

namespace luminal::io {
namespace {

float read_float(DType dt, const std::byte* p) {
  if (dt == DType::F32) {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  uint16_t bits;
  std::memcpy(&bits, p, 2);
  return dt == DType::F16 ? f16_bits_to_f32(bits) : bf16_bits_to_f32(bits);
}

void write_float(DType dt, float v, std::byte* p) {
  switch (dt) {
    case DType::F32:
      std::memcpy(p, &v, 4);
      return;
    case DType::F64: {
      const double d = v;
      std::memcpy(p, &d, 8);
      return;
    }
    default: {
      const uint16_t bits = dt == DType::F16 ? f32_to_f16_bits(v) : f32_to_bf16_bits(v);
      std::memcpy(p, &bits, 2);
    }
  }
}

}  // namespace

bool can_convert_float(DType from, DType to) {
  const bool src_ok = from == DType::F32 || from == DType::F16 || from == DType::BF16;
  return src_ok && is_float(to) && from != to;
}

void convert_float_elements(DType from, DType to, const std::byte* src, std::byte* dst,
                            size_t count) {
  if (!can_convert_float(from, to))
    throw std::invalid_argument(
        fmt::format("[load] cannot convert {} to {}", dtype_name(from), dtype_name(to)));
  const size_t si = dtype_size(from), di = dtype_size(to);
  for (size_t i = 0; i < count; ++i) write_float(to, read_float(from, src + i * si), dst + i * di);
}

}  // namespace luminal::io
