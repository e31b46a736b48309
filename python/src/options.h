// Compile options from Python: the luminal package hands a dict of keyword arguments; unknown keys
// and bad values are errors naming the key.
#pragma once

#include <nanobind/nanobind.h>

#include "luminal/program.h"

namespace luminal::python {

/// ProgramOptions from a dict, on top of the documented environment's defaults (docs/options.md):
///   device ("cpu" | "reference" | "cuda" | "cuda:N"), precision ("fp32" | "tf32" | "tf32x3" | "bf16"),
///   alternative, candidate, search (bool), search_candidates, search_seconds, search_seed,
///   research (bool: search even on a plan-cache hit), plan_cache (bool), max_batch (int),
///   dim_hints ({symbol: value}), cuda_graph (bool), graph_branches (int), branch_priorities (bool),
///   matmul_autotune (bool).
ProgramOptions program_options(const nanobind::dict& d);

}  // namespace luminal::python
