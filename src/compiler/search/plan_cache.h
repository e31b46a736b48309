// The plan cache (shared/DESIGN.md section 9): the search's winner on disk, keyed by graph hash,
// device, dims and options, so the second compile of a model needs no search.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "compiler/search/candidate.h"

namespace luminal::compiler::search {

/// A stored search result.
struct CachedPlan {
  Candidate candidate;
  double us = 0;       // the winner's measured time
  int candidates = 0;  // how many the search evaluated
};

/// The on-disk plan cache: $LUMINAL_CACHE_DIR/plans/v1, else $XDG_CACHE_HOME/luminal/plans/v1, else
/// $HOME/.cache/luminal/plans/v1 (the JIT cache's rule; CompileOptions::plan_cache turns it off).
/// One JSON file per key, <16 hex>.json:
///   {"version":1,"key":"<16 hex>","candidate":"<to_string>","us":..,"candidates":..}
class PlanCache {
 public:
  /// The cache under io::cache_root() (disabled when `enabled` is false or no root is set).
  static PlanCache in_cache_root(bool enabled = true);
  /// The cache in dir (an empty path: disabled).
  explicit PlanCache(std::filesystem::path dir) : dir_(std::move(dir)) {}
  /// The entry for key, or nullopt when missing, unreadable, of another version, or corrupt (a
  /// corrupt entry is logged under LUMINAL_DEBUG and will be overwritten by the next store).
  std::optional<CachedPlan> load(uint64_t key) const;
  /// Writes the entry atomically (a temp file in the same directory, then rename); errors are
  /// swallowed (a cache must never fail a compile) but logged under LUMINAL_DEBUG.
  void store(uint64_t key, const CachedPlan& plan) const;
  /// False when constructed with an empty path.
  bool enabled() const { return !dir_.empty(); }
  /// The directory holding the entries.
  const std::filesystem::path& dir() const { return dir_; }
  /// The entry's file for key: dir/<16 hex>.json (empty when disabled).
  std::filesystem::path file_for(uint64_t key) const;

 private:
  std::filesystem::path dir_;
};

/// The cache key: FNV-1a over a version tag and each part, length-prefixed so that no two part
/// lists collide by concatenation (e.g. {graph hash, device description, dims text, options text}).
uint64_t plan_key(const std::vector<std::string>& parts);

}  // namespace luminal::compiler::search
