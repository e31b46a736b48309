// Cumsum: inclusive prefix sums along one axis as one custom op. Its decomposition is log2(len)
// shifted adds (Hillis-Steele) along a concrete length, a masked O(len^2) sum along a symbolic one
// (a KeyedJaggedTensor's lengths -> offsets with a dynamic batch: 4.6 ms of a 12 ms torchrec DLRM
// call at batch 2048 on 2 cores as a generated reduction); fused into one kernel every element
// re-evaluates the whole tree, O(len) reads each, so the CPU backend runs a sequential scan and
// CUDA a block-wide scan per line instead.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "luminal/custom_op.h"

namespace luminal::custom {

/// out = inclusive prefix sums of x along `axis` (I32, I64, F32 or F64; exact for integers). Input x
/// (the axis concrete or symbolic); output of x's shape and dtype.
class Cumsum final : public CustomOp {
 public:
  /// Sums along `axis` (non-negative).
  explicit Cumsum(int axis) : axis_(axis) {}
  /// "cumsum".
  std::string name() const override { return "cumsum"; }
  /// The reference: log2(len) steps of x + (x shifted by s, zeros shifted in); a masked sum when
  /// the axis is symbolic.
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& inputs) const override;
  /// The host kernel: a sequential scan per line along the axis.
  std::optional<HostKernel> host_kernel(const KernelRequest& request) const override;
  /// The CUDA kernel: a block per line (emit_cumsum); the length is read at run time.
  std::optional<CustomKernel> cuda_kernel(const KernelRequest& request) const override;

 private:
  int axis_;
};

/// The CUDA kernel over x viewed as [outer, len, inner] (dt I32 / I64 / F32 / F64; len from x's
/// element count at run time): one block of 256 threads per line. Parameters: x, out, the error
/// word (unused), x's element count.
CustomKernel emit_cumsum(DType dt, int64_t outer, int64_t inner);

/// x's inclusive prefix sums along `axis` as one Cumsum node (x I32 / I64 / F32 / F64); throws
/// "[cumsum] ..." otherwise.
GraphTensor cumsum(const GraphTensor& x, int axis);

}  // namespace luminal::custom
