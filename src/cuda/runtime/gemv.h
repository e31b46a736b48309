// The GEMV path of a matmul step: for few rows (m <= MatmulStep::gemv_max_m at execute) a
// bandwidth-bound kernel (src/cuda/kernels/gemv.cuh) instead of cuBLASLt.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/kernel_plan.h"
#include "cuda/runtime/cuda_plan.h"

namespace luminal::cuda {

/// Threads per block of the GEMV kernel (kLumGemvWarps warps in gemv.cuh).
constexpr unsigned kGemvBlock = 256;
/// Weight loads in flight per lane (LUMINAL_GEMV_LOADS=2|4|8|16 overrides it, for tuning): 4 was
/// fastest at every Llama-1B decode shape on the H200 (bench/gemv_bench.cpp, 2026-12-04; 8 and 16
/// take registers that occupancy needs more).
constexpr int kGemvLoads = 4;

/// The kernel's entry point for dt ("luminal_gemv_bf16"); throws for dtypes it does not serve.
std::string gemv_entry(DType dt);
/// A complete NVRTC translation unit defining gemv_entry(dt), each lane keeping `loads` 16-byte
/// weight loads in flight.
std::string gemv_source(DType dt, int loads = kGemvLoads);

/// Warps per output column (1, 2, 4 or 8) for an n x k product: enough warps in flight to keep
/// the weights streaming (a 2048 x 2048 projection has only 2048 columns), at least one 16-byte
/// vector per lane in each slice of k, on a device of `sm_count` SMs. `vec` is the elements per
/// vector.
int64_t gemv_splits(int64_t n, int64_t k, int64_t vec, int sm_count);

/// The GEMV launch for matmul step m at these dims and pointers, or nullopt when it does not
/// apply (m above gemv_max_m, B not contiguous along k, misaligned, an empty result): the
/// caller then runs cuBLASLt. `forced_splits` > 0 replaces gemv_splits' choice
/// (LUMINAL_GEMV_SPLITS=1|2|4|8, for tuning).
std::optional<Launch> gemv_launch(const compiler::MatmulStep& m, CUfunction fn,
                                  const StepContext& c, int forced_splits = 0);

/// The grouped kernel's entry point in gemv_source(dt): up to three products of one A per launch.
std::string gemv_group_entry(DType dt);

/// How far ahead (in steps) group_gemvs looks for products of the same A.
constexpr size_t kGemvGroupLookahead = 6;

/// (step, earlier step) pairs of GEMV-capable matmul steps that read the same A (same buffer,
/// offset, m and k) within kGemvGroupLookahead steps: where group_gemvs may run the later one.
/// The arena keeps the later one's output apart from what the steps in between use.
std::vector<std::pair<int, int>> gemv_group_heads(const compiler::KernelPlan& plan);

/// The matmul steps (GEMV-capable, no bias or ReLU) whose output only a generated kernel computing
/// nothing but `out = output + residual` reads, within kGemvGroupLookahead steps, both operands
/// read whole and contiguous (Llama's residual adds after the o and down projections).
std::vector<GemvResidual> gemv_residuals(const Graph& g, const compiler::KernelPlan& plan);

/// For each fusion whose product runs the GEMV kernel at these dims and commutes (by `acc`) with
/// the steps up to the Add: points the GEMV's output at the Add's, passes it the residual and
/// empties the Add's op; updates acc. The arena must keep `out` apart from the steps in between
/// (the runtime extends its lifetime to the product's step). Returns the launches saved.
int fuse_gemv_residuals(std::vector<Op>& ops, const std::vector<GemvResidual>& fusions,
                        std::vector<compiler::StepAccess>& acc,
                        const std::vector<CUdeviceptr>& ptrs, const std::vector<size_t>& bytes);

/// Merges GEMV launches that read the same A (same m, k, lda; batch 1, no bias or ReLU) into one
/// launch of the grouped kernel (group_fns: single entry -> group entry) at the first one's place,
/// up to three, when each later one commutes with the steps it jumps over (by `acc`, the steps'
/// memory ranges): Llama's q, k and v projections, and gate and up. The others' ops are left empty.
/// `is_gemv[i]`: ops[i].launch is a GEMV launch. Returns the launches saved (a group of three saves
/// two). Each launch has a fixed cost (~2-3 us per small GEMV on the H200 in a graph), so fewer,
/// larger launches stream the weights closer to the bandwidth.
int group_gemvs(std::vector<Op>& ops, const std::vector<bool>& is_gemv,
                std::vector<compiler::StepAccess> acc,
                const std::map<CUfunction, CUfunction>& group_fns);

}  // namespace luminal::cuda
