// The two environment variables the library reads itself (every other setting is an options field,
// filled from the environment only at the CLI and Python boundary: luminal/environment.h).
#pragma once

#include <filesystem>

namespace luminal::io {

/// $LUMINAL_CACHE_DIR, else $XDG_CACHE_HOME/luminal, else $HOME/.cache/luminal; empty when none
/// is set (the on-disk caches are then off).
std::filesystem::path cache_root();

/// $LUMINAL_DEBUG as a number (0 when unset; read on slow paths only): 1 logs each search candidate, kernel
/// compiles and failures with their source; 2 also dumps every generated kernel.
int debug_level();

}  // namespace luminal::io
