// Reductions: SumReduce, MaxReduce and mean.
#include "core/tensor/helpers.h"

namespace luminal {

namespace {

GraphTensor reduce(OpKind kind, std::string_view op, const GraphTensor& x, int axis) {
  detail::graph_of(x, op);
  const int a = detail::normalize_axis(op, axis, x.rank());
  std::vector<Expr> shape = x.dims();
  shape.erase(shape.begin() + a);
  return detail::make_node(kind, x.dtype, {x}, std::move(shape), a);
}

}  // namespace

GraphTensor GraphTensor::sum(int axis) const {
  return reduce(OpKind::SumReduce, "sum", *this, axis);
}

GraphTensor GraphTensor::max(int axis) const {
  return reduce(OpKind::MaxReduce, "max", *this, axis);
}

// sum / n. A constant n becomes a Constant 1/n; a symbolic n is counted on the device as the sum
// of a broadcast Constant 1 along the axis (one tiny reduction), then inverted.
GraphTensor GraphTensor::mean(int axis) const {
  detail::graph_of(*this, "mean");
  detail::require_float("mean", *this);
  const int a = detail::normalize_axis("mean", axis, rank());
  const Expr& n = dims()[a];
  GraphTensor s = sum(a);
  if (auto c = n.as_const()) return s * (1.0 / static_cast<double>(*c));
  GraphTensor count = graph->constant(1.0, dtype).expand_dim(0, n).sum(0);
  return s * detail::broadcast_to("mean", count.recip(), s.dims());
}

}  // namespace luminal
