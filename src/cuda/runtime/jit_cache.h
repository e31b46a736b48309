// Two-level cache of NVRTC output: in memory, and on disk keyed by a stable hash.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cuda/runtime/nvrtc.h"

namespace luminal::cuda {

/// FNV-1a, 64-bit: a fixed algorithm, so disk cache names are stable across builds and machines.
uint64_t fnv1a64(std::string_view data, uint64_t h = 0xcbf29ce484222325ull);

/// Compiled device images by (source, target, NVRTC version, options, embedded headers).
/// Disk files hold the full key, so a hash collision or a corrupt file is a miss, never a wrong
/// image; writes go to a temporary file renamed into place, so readers never see half a file.
class JitCache {
 public:
  /// Hit and compile counters.
  struct Stats {
    size_t memory_hits = 0, disk_hits = 0, compiles = 0;
  };

  /// A cache storing files under dir; an empty dir keeps it in memory only.
  explicit JitCache(std::filesystem::path dir);
  /// The process-wide cache: $LUMINAL_CACHE_DIR/jit/v1, else $XDG_CACHE_HOME/luminal/jit/v1, else
  /// ~/.cache/luminal/jit/v1; memory only when LUMINAL_JIT_DISK_CACHE=0 or no folder is usable.
  static JitCache& global();

  /// The image of `source` for `target` (from memory, disk, or a fresh NVRTC compile).
  DeviceImage get(const std::string& source, const std::string& name, const std::string& target);
  /// Counters since construction.
  Stats stats() const;
  /// The disk folder ("" when memory only).
  const std::filesystem::path& dir() const { return dir_; }
  /// The disk file a key is stored in.
  std::filesystem::path file_for(const std::string& key) const;
  /// The full cache key of a compile (also stored inside the disk file).
  static std::string key_of(const std::string& source, const std::string& name,
                            const std::string& target);

 private:
  bool read_disk(const std::string& key, DeviceImage& out) const;
  void write_disk(const std::string& key, const DeviceImage& img) const;

  std::filesystem::path dir_;
  mutable std::mutex mu_;
  std::unordered_map<std::string, DeviceImage> memory_;
  Stats stats_;
};

}  // namespace luminal::cuda
