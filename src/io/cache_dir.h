// Where luminal's on-disk caches live (the JIT cache, the plan cache).
#pragma once

#include <filesystem>

namespace luminal::io {

/// $LUMINAL_CACHE_DIR, else $XDG_CACHE_HOME/luminal, else $HOME/.cache/luminal; empty when none
/// is set (the caches are then off).
std::filesystem::path cache_root();

}  // namespace luminal::io
