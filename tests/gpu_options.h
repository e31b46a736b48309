// Options of a GPU test's executable: what compile() takes plus the CUDA backend's, so a test sets
// both in one place and passes `cuda::backend(o.cuda), o`.
#pragma once

#include "luminal/compile.h"
#include "luminal/cuda.h"

namespace luminal::test {

/// CompileOptions (search, buckets, candidate, dim hints, precision) and the CUDA backend's.
struct GpuOptions : CompileOptions {
  cuda::CudaOptions cuda;
};

}  // namespace luminal::test
