// RmsNorm: transformers' LlamaRMSNorm as one custom op, so a norm is one kernel on CUDA (one
// block per row) instead of a reduction, a multiply and a cast. The rms_norm rule
// (src/compiler/rules/rms_norm.cpp) offers it in place of nn::rms_norm's ops.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "luminal/custom_op.h"

namespace luminal::custom {

/// out = weight * (x.float() * rsqrt(mean(x^2, -1) + eps)).to(x.dtype), i.e. nn::rms_norm.
/// Inputs: x [rows..., D] (F32, BF16 or F16), weight [D] (x's dtype). Output: x's shape and dtype.
class RmsNorm final : public CustomOp {
 public:
  /// A norm adding `eps` to the mean square.
  explicit RmsNorm(double eps) : eps_(eps) {}
  /// "rms_norm".
  std::string name() const override { return "rms_norm"; }
  /// The epsilon.
  double eps() const { return eps_; }
  /// The reference: nn::rms_norm(x, weight, eps).
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& inputs) const override;
  /// The one-pass kernel for these dims (rows are read at run time), or nullopt for shapes it
  /// does not cover (the decomposition then runs).
  std::optional<CustomKernel> cuda_kernel(const KernelRequest& request) const override;

 private:
  double eps_;
};

/// Throws "[rms_norm] ..." naming the tensor unless x is a float tensor [rows..., D] of F32, BF16
/// or F16 and weight is [D] of x's dtype.
void check_rms_norm_inputs(const GraphTensor& x, const GraphTensor& weight);

/// How the kernel maps a row of D elements of dtype dt onto one block.
struct RmsNormLayout {
  int64_t vec = 1;        // elements per load: 16 bytes where D allows
  int64_t threads = 32;   // blockDim.x: a warp for short rows, up to kMaxThreads
  int64_t per_thread = 1; // vector chunks each thread keeps in registers
};

/// The layout for row length d and dtype dt, or nullopt when a row does not fit in registers.
std::optional<RmsNormLayout> rms_norm_layout(int64_t d, DType dt);

/// Why the kernel cannot run rows of length d in dtype dt ("" when it can).
std::string rms_norm_refusal(int64_t d, DType dt);

/// The generated kernel for rows of length d over `rows` rows (only the grid depends on rows).
/// Parameters: x, weight, out, the error word (unused), the two element counts (custom_op.h).
CustomKernel emit_rms_norm(int64_t d, DType dt, double eps, int64_t rows);

}  // namespace luminal::custom
