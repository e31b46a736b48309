// custom::CrossGemm on the CPU: x0 * (u W^T + b) + xl as one oneDNN matmul primitive, the bias in
// the primitive and x0, xl as binary post-ops (multiply, then add), so u W^T + b is never written
// and read back (the graph's plan runs the GEMM, then a loop over three [B, n] tensors).
#pragma once

#include <optional>
#include <vector>

#include "custom/cross_gemm/op.h"

namespace luminal::cpu {

/// The kernel for these input dims (u [m, k], W [n, k], b [n], x0, xl [m, n]) in `dtype`; nullopt
/// when oneDNN has no such primitive on this CPU (bf16 without AVX-512 BF16: the decomposition
/// then runs, with its matmul widened to f32).
std::optional<HostKernel> cross_gemm_host_kernel(const custom::CrossGemm& op,
                                                 const std::vector<std::vector<int64_t>>& dims, DType dtype);

}  // namespace luminal::cpu
