// The library's own environment reads: where caches live, and how much to log.
#include "io/environment.h"

#include <cstdlib>

namespace luminal::io {

std::filesystem::path cache_root() {
  if (const char* v = std::getenv("LUMINAL_CACHE_DIR"); v && *v) return v;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::path(x) / "luminal";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::filesystem::path(h) / ".cache" / "luminal";
  return {};
}

int debug_level() {
  const char* v = std::getenv("LUMINAL_DEBUG");  // read each time: tests set it per case
  return v ? std::atoi(v) : 0;
}

}  // namespace luminal::io
