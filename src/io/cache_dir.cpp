#include "io/cache_dir.h"

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

}  // namespace luminal::io
