// MlpChain: a chain of dense layers, y_l = epilogue(y_{l-1} W_l^T + b_l) with the epilogue nothing,
// ReLU or DCNv2's cross step x0 * (.) + y_{l-2}, as one op (issue 26's fused MLP chain; DLRM-v2's
// cross net and top MLP are one chain). As graph ops each layer is a GEMM library call with its own
// launch, ramp-up and tail, and at small batches (DLRM-v2's top MLP at one 270-pair sample: five GEMMs of 4-10 us for
// ~4 us of work in all) those dominate. The CUDA kernel runs the whole chain in one persistent
// launch (mlp_chain.cuh); the compiler offers it as a search alternative to the per-layer plan.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "luminal/custom_op.h"

namespace luminal::custom {

/// The most rows the CUDA kernel takes (its workspace keeps a count per layer and row block up to
/// this, at fixed places); past it the per-layer GEMMs run.
constexpr int64_t kMlpChainMaxRows = 65536;

/// What follows a chain layer's bias: nothing, ReLU, or the cross step x0 * (.) + y_{l-2} (x0 the
/// chain's input, y_{l-2} the previous layer's input: torchrec LowRankCrossNet's W_l after V_l).
enum class ChainEpilogue { None, Relu, Cross };

/// The shape of an MlpChain (the batch M is the input's and can change between executes).
struct MlpChainShape {
  int64_t k = 0;                 // the input's width
  std::vector<int64_t> widths;   // each layer's output width (its W is [widths[l], previous width])
  std::vector<ChainEpilogue> epilogue;  // each layer's
  std::vector<bool> bias;        // each layer: a bias b_l (empty: every layer has one; a cross layer must)
  DType dtype = DType::BF16;     // every input and the output: F32, F16 or BF16
  int tile_m = 64;               // the CUDA kernel's rows per tile: 64, or 32 (twice the tiles at small batches)
  /// Throws "[mlp_chain] ..." on an inconsistent shape.
  void validate() const;
  /// Layer l's input width.
  int64_t in_width(size_t l) const { return l == 0 ? k : widths[l - 1]; }
  /// Whether layer l has a bias.
  bool has_bias(size_t l) const { return bias.empty() || bias[l]; }
  /// The op's inputs: x, then W_l and (where it has one) b_l per layer.
  size_t input_count() const {
    size_t n = 1;
    for (size_t l = 0; l < widths.size(); ++l) n += has_bias(l) ? 2 : 1;
    return n;
  }
};

/// The chain over inputs x [M, k], then W_l [n_l, k_l] and (where it has one) b_l [n_l] for each
/// layer; output [M, n_last].
class MlpChain final : public CustomOp {
 public:
  /// Validates the shape.
  explicit MlpChain(MlpChainShape shape);
  /// "mlp_chain".
  std::string name() const override { return "mlp_chain"; }
  /// The reference: per layer a matmul, the bias and the epilogue, as graph ops.
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& inputs) const override;
  /// The persistent tensor-core kernel for F16 / BF16 on compute capability 8.0 and up with every
  /// layer's k a multiple of 8; nullopt otherwise (the decomposition runs).
  std::optional<CustomKernel> cuda_kernel(const KernelRequest& request) const override;
  /// The shape it was built for.
  const MlpChainShape& shape() const { return shape_; }

 private:
  MlpChainShape shape_;
};

/// The generated kernel at batch m on a device of `sm_count` multiprocessors (m sizes the grid and
/// the workspace).
CustomKernel emit_mlp_chain(const MlpChainShape& s, int64_t m, int sm_count);

/// The layers as one MlpChain node: weights[l] [n_l, k_l], biases[l] [n_l] or none, epilogue[l];
/// throws "[mlp_chain] ..." naming the tensor whose shape or dtype does not fit.
GraphTensor mlp_chain(const GraphTensor& x, const std::vector<GraphTensor>& weights,
                      const std::vector<std::optional<GraphTensor>>& biases, const std::vector<ChainEpilogue>& epilogue,
                      int tile_m = 64);
/// A chain of Linear layers, each with a bias, ReLU where relu[l].
GraphTensor linear_chain(const GraphTensor& x, const std::vector<GraphTensor>& weights,
                         const std::vector<GraphTensor>& biases, const std::vector<bool>& relu, int tile_m = 64);

}  // namespace luminal::custom
