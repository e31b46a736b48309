// CrossGemm: the second GEMM of a DCNv2 low-rank cross layer with the layer's whole epilogue,
// x_{l+1} = x0 * (u W^T + b) + x_l (u = x_l V^T, torchrec's LowRankCrossNet). As graph ops the
// GEMM writes y = u W^T + b ([B, 3456] at DLRM-v2's width) and a second kernel reads y, x0 and x_l
// back to write x_{l+1}: 22-25 us of a layer's ~40 us at batch 2048 on an H100. The kernel applies
// the epilogue to the accumulators, so y never reaches memory.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "luminal/custom_op.h"

namespace luminal::custom {

/// The shape of a CrossGemm (the batch M is the inputs' and can change between executes).
struct CrossGemmShape {
  int64_t n = 0;  // output width (x0's)
  int64_t k = 0;  // the rank: u's width
  DType dtype = DType::BF16;  // every input and the output: F32, F16 or BF16
  bool wgmma = true;  // the wgmma core where the device has it (9.0); false keeps mma.sync (its tests there)
  int stages = 3;        // the wgmma core's k stages of 32 KiB: 3 (two blocks per SM) or 4 (one)
  bool overlap = false;  // wgmma: a stage's MMAs still run while the next stage's are issued
  int tile_m = 128;      // wgmma: rows per block, 128 (two warpgroups) or 64 (one: twice the blocks at small batches)
  /// Throws "[cross_gemm] ..." on an inconsistent shape.
  void validate() const;
};

/// out = x0 * (u W^T + b) + xl. Inputs u [M, k], W [n, k] (nn.Linear's layout), b [n], x0 [M, n],
/// xl [M, n]; output [M, n]; all of one dtype.
class CrossGemm final : public CustomOp {
 public:
  /// Validates the shape.
  explicit CrossGemm(CrossGemmShape shape);
  /// "cross_gemm".
  std::string name() const override { return "cross_gemm"; }
  /// The reference: the matmul, bias, product and sum as graph ops.
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& inputs) const override;
  /// The tensor-core kernel for F16 / BF16 on compute capability 8.0 and up (cross_gemm_sm90.cuh's
  /// wgmma on 9.0, cross_gemm.cuh's mma.sync elsewhere), with n and k multiples of 8; nullopt
  /// otherwise (the decomposition runs).
  std::optional<CustomKernel> cuda_kernel(const KernelRequest& request) const override;
  /// The shape it was built for.
  const CrossGemmShape& shape() const { return shape_; }

 private:
  CrossGemmShape shape_;
};

/// The generated kernel at batch m (only the grid depends on m): the wgmma core (sm_90a, with the
/// shape's stages and overlap) or mma.sync.
CustomKernel emit_cross_gemm(const CrossGemmShape& s, int64_t m, bool wgmma = false);

/// x0 * (u W^T + b) + xl as one CrossGemm node (`wgmma`, `stages`, `overlap` and `tile_m` as
/// CrossGemmShape's); throws "[cross_gemm] ..." naming the tensor whose shape or dtype does not fit.
GraphTensor cross_gemm(const GraphTensor& u, const GraphTensor& w, const GraphTensor& b, const GraphTensor& x0,
                       const GraphTensor& xl, bool wgmma = true, int stages = 3, bool overlap = false,
                       int tile_m = 128);

}  // namespace luminal::custom
