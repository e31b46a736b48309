// The compiler's search (shared/DESIGN.md section 9) as the runtimes expose it: its options and
// what it decided.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace luminal {

/// False when LUMINAL_SEARCH=0 is set (the default of SearchOptions::enabled).
bool search_enabled_by_default();

/// Options of the search over a plan's alternatives.
struct SearchOptions {
  bool enabled = search_enabled_by_default();  // false: the heuristic plan (--no-search)
  uint64_t seed = 0;            // the genetic search's RNG seed
  int max_candidates = 48;      // candidates evaluated at most (the heuristic plan included)
  double time_budget_s = 10.0;  // no new candidate is started after this many seconds
  int warmup = 2, trials = 5;   // runs per candidate before and while timing
  uint64_t memory_cap = 0;      // device bytes a candidate's plan may use (0: no cap)
  bool first_valid = false;     // stop at the first valid candidate (the reference runtime's mode)
  bool force = false;           // search even when the plan cache has an entry (and overwrite it)
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
