// The environment variables luminal's programs read, read once at the boundary (the CLIs, the
// Python module) into the options structs; the library itself reads only LUMINAL_CACHE_DIR and
// LUMINAL_DEBUG. The list, with what each sets, is docs/options.md. Explicit flags and arguments
// are applied after these, so they win.
#pragma once

#include "luminal/compile.h"
#include "luminal/cuda.h"

namespace luminal {

/// LUMINAL_SEARCH=0 (search.enabled = false), LUMINAL_RULES=<alternative> (alternative: none,
/// mega, ...), LUMINAL_PLAN_CACHE=0 (plan_cache = false). Throws "[env] NAME=value: ..." for a
/// value it cannot take.
void apply_environment(CompileOptions& opts);

/// LUMINAL_GRAPH_BRANCHES=N, LUMINAL_MATMUL_AUTOTUNE=0|1, LUMINAL_GEMV=0|1, LUMINAL_GEMV_LOADS,
/// LUMINAL_GEMV_SPLITS, LUMINAL_GEMV_GROUP=0|1, LUMINAL_GEMV_RESIDUAL=0|1,
/// LUMINAL_STAGED_IN_GRAPH=0|1, LUMINAL_CUDA_POISON=0|1.
void apply_environment(cuda::CudaOptions& opts);

/// The process-wide CUDA settings: LUMINAL_CUDA_DRIVER (a driver library), LUMINAL_CUDA_INCLUDE
/// (':'-separated NVRTC include dirs), LUMINAL_JIT_DISK_CACHE=0. Call once, first.
void apply_process_environment();

}  // namespace luminal
