// Cumsum: inclusive prefix sums along one axis of concrete length as one custom op. Its
// decomposition is log2(len) shifted adds (Hillis-Steele); fused into one kernel every element
// re-evaluates the whole tree, O(len) reads each (26 tables' lengths -> offsets at batch 2048: ~20 ms
// on 2 cores), so the CPU backend runs a sequential scan instead.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "luminal/custom_op.h"

namespace luminal::custom {

/// out = inclusive prefix sums of x along `axis` (I32, I64 or F32; exact for integers). Input x
/// (its axis of concrete length); output of x's shape and dtype.
class Cumsum final : public CustomOp {
 public:
  /// Sums along `axis` (non-negative).
  explicit Cumsum(int axis) : axis_(axis) {}
  /// "cumsum".
  std::string name() const override { return "cumsum"; }
  /// The reference: log2(len) steps of x + (x shifted by s, zeros shifted in).
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& inputs) const override;
  /// The host kernel: a sequential scan per line along the axis.
  std::optional<HostKernel> host_kernel(const KernelRequest& request) const override;

 private:
  int axis_;
};

/// x's inclusive prefix sums along `axis` as one Cumsum node (x I32 / I64 / F32, the axis of
/// concrete length); throws "[cumsum] ..." otherwise.
GraphTensor cumsum(const GraphTensor& x, int axis);

}  // namespace luminal::custom
