// The GEMV path of a matmul step: for few rows (m <= MatmulStep::gemv_max_m at execute) a
// bandwidth-bound kernel (src/cuda/kernels/gemv.cuh) instead of cuBLASLt.
#pragma once

#include <optional>
#include <string>

#include "compiler/kernel_plan.h"
#include "cuda/runtime/runtime_impl.h"

namespace luminal::cuda {

/// The kernel's entry point for dt ("luminal_gemv_bf16"); throws for dtypes it does not serve.
std::string gemv_entry(DType dt);
/// A complete NVRTC translation unit defining gemv_entry(dt).
std::string gemv_source(DType dt);
/// Threads per block of the GEMV kernel (one warp per output column).
constexpr unsigned kGemvBlock = 128;

/// The GEMV launch for matmul step m at these dims and pointers, or nullopt when it does not
/// apply (m above gemv_max_m, B not contiguous along k, misaligned, an empty result): the
/// caller then runs cuBLASLt.
std::optional<Launch> gemv_launch(const compiler::MatmulStep& m, CUfunction fn,
                                  const StepContext& c);

}  // namespace luminal::cuda
