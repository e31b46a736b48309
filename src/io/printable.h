// Quoting untrusted bytes (file names, headers) in error messages (internal).
#pragma once

#include <string>
#include <string_view>

#include <fmt/format.h>

namespace luminal::io {

/// Escapes non-printable and non-ASCII bytes, so messages quoting corrupt input stay valid UTF-8.
inline std::string printable(std::string_view s) {
  std::string out;
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    out += (u >= 0x20 && u < 0x7F) ? std::string(1, c) : fmt::format("\\x{:02x}", u);
  }
  return out;
}

}  // namespace luminal::io
