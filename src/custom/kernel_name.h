// Stable names for per-shape generated custom-op kernels (internal).
#pragma once

#include <cstdint>
#include <string_view>

namespace luminal::custom {

/// FNV-1a (64-bit) of s: a stable kernel name suffix per shape description.
inline uint64_t fnv1a(std::string_view s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : s) h = (h ^ ch) * 1099511628211ull;
  return h;
}

}  // namespace luminal::custom
