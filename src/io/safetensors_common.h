// Helpers shared by the safetensors reader and writer (internal).
#pragma once

#include <bit>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "luminal/dtype.h"

static_assert(std::endian::native == std::endian::little,
              "safetensors I/O assumes a little-endian host");

namespace luminal::io {

/// "[2, 3]", for messages.
inline std::string shape_str(const std::vector<int64_t>& shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

/// Element count of a shape with non-negative dims, or nullopt on uint64 overflow.
inline std::optional<uint64_t> checked_numel(const std::vector<int64_t>& shape) {
  uint64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, static_cast<uint64_t>(d), &n)) return std::nullopt;
  }
  return n;
}

/// Byte size of a tensor, or nullopt on overflow.
inline std::optional<uint64_t> checked_nbytes(const std::vector<int64_t>& shape, DType dt) {
  auto n = checked_numel(shape);
  uint64_t bytes = 0;
  if (!n || __builtin_mul_overflow(*n, static_cast<uint64_t>(dtype_size(dt)), &bytes))
    return std::nullopt;
  return bytes;
}

}  // namespace luminal::io
