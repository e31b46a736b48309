// The compiler's search (shared/DESIGN.md section 9) as the runtimes expose it: its options and
// what it decided.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace luminal {

/// Options of the search over a plan's alternatives.
struct SearchOptions {
  bool enabled = true;          // false: the default plan, unmeasured (--no-search)
  uint64_t seed = 0;            // the genetic search's RNG seed
  int max_candidates = 48;      // candidates evaluated at most (the heuristic plan included)
  double time_budget_s = 10.0;  // no new candidate is started after this many seconds
  int warmup = 2, trials = 5;   // runs per candidate before and while timing
  uint64_t memory_cap = 0;      // device bytes a candidate's plan may use (0: no cap)
  // Per-candidate limits (the heuristic plan is exempt): a candidate whose lowering and compile
  // took longer than compile_timeout_s, or whose first timed run took longer than
  // run_timeout_factor times the heuristic plan's time, is discarded as timed out (measured after
  // the fact: a compile or kernel in flight is not interrupted).
  double compile_timeout_s = 30.0;
  double run_timeout_factor = 10.0;
  bool first_valid = false;     // stop at the first valid candidate (the reference runtime's mode)
  bool force = false;           // search even when the plan cache has an entry (and overwrite it)
};

/// A range of values of one dynamic dim served by one compiled plan (shared/DESIGN.md section 9).
struct DimBucket {
  int64_t min = 1, max = 1;
  /// The value the bucket's plan is compiled and sized for: max (every v in the bucket fits its
  /// buffers). Throws std::out_of_range "[bucket] v outside [min, max]".
  int64_t representative(int64_t v) const;
  /// min <= v <= max.
  bool contains(int64_t v) const { return min <= v && v <= max; }
};

/// Power-of-two buckets covering [lo, hi]: [1,1],[2,2],[3,4],[5,8],... (each ends at a power of
/// two), the first starting at lo, the last ending at hi. Throws std::invalid_argument for lo < 1
/// or hi < lo.
std::vector<DimBucket> pow2_buckets(int64_t lo, int64_t hi);

/// The index of the bucket holding v (binary search over sorted, disjoint buckets), or -1.
int find_bucket(const std::vector<DimBucket>& buckets, int64_t v);

/// Dim buckets of one dynamic dim: a runtime keeps one compiled (and searched) plan per range and
/// each execute() runs the plan of the range holding the dim's value. Off when `dim` is empty.
struct BucketOptions {
  std::string dim;                 // the dynamic dim dispatched on (e.g. "batch")
  std::vector<DimBucket> ranges;   // sorted, disjoint (pow2_buckets(1, max) is the usual choice)
  /// True when buckets are configured.
  bool enabled() const { return !dim.empty(); }
  /// Throws "[bucket] ..." unless ranges are non-empty, each min <= max, sorted and disjoint.
  void validate() const;
};

/// What the search decided for a runtime (CudaRuntime::search_report()).
struct SearchReport {
  bool ran = false;         // a search (or a plan-cache lookup) ran
  bool from_cache = false;  // the winner came from the plan cache
  std::string candidate;    // the winner, as "key=option,..." ("" = the heuristic plan)
  double us = 0;            // the winner's measured time per run
  double heuristic_us = 0;  // the heuristic plan's (0 when not measured: a cache hit)
  int candidates = 0;       // candidates evaluated
  int discarded = 0;        // of those: failed, mismatched, over the memory cap
  bool exhaustive = false;  // every combination was evaluated
  double seconds = 0;       // wall time of the search, compiles included
  std::vector<std::string> choices;  // per choice point of the winner: "key = option (what)"
};

}  // namespace luminal
