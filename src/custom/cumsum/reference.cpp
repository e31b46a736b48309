// Cumsum's checks and reference decomposition: Hillis-Steele shifted adds along an axis of
// concrete length, a masked sum over an [..., L, L] broadcast along a symbolic one.
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "custom/cumsum/op.h"

namespace luminal::custom {

namespace {

// Inclusive prefix sums along the last axis of symbolic length L: out[..., i] = sum_j x[..., j] *
// (j <= i) over an [..., L, L] broadcast (O(L^2): the reference's form; the CPU runs a scan).
// Floats select with where() so that an inf beyond i cannot turn into NaN (inf * 0).
GraphTensor masked_scan(const GraphTensor& x) {
  const int last = x.rank() - 1;
  const Expr len = x.dims()[size_t(last)];
  const GraphTensor io = x.graph->arange(len, DType::I64);
  const GraphTensor mask = io.expand_dim(0, len).le(io.expand_dim(1, len));  // [i, j]: j <= i
  const GraphTensor rows = x.expand_dim(last, len);                          // [..., i, j]
  if (x.dtype != DType::F32 && x.dtype != DType::F64) return (rows * mask.cast(x.dtype)).sum(last + 1);
  return where(mask, rows, x.graph->constant(0.0, x.dtype)).sum(last + 1);
}

}  // namespace

GraphTensor Cumsum::decompose(Graph& g, const std::vector<GraphTensor>& inputs) const {
  (void)g;
  if (inputs.size() != 1) throw std::invalid_argument(fmt::format("[cumsum] {} inputs, expected 1", inputs.size()));
  GraphTensor x = inputs[0];
  if (const auto len = x.dims().at(size_t(axis_)).as_const()) {
    for (int64_t s = 1; s < *len; s *= 2) x = x + x.slice(axis_, 0, *len - s).pad(axis_, s, 0);
    return x;
  }
  std::vector<int> to_last, back(size_t(x.rank()));
  for (int i = 0; i < x.rank(); ++i)
    if (i != axis_) to_last.push_back(i);
  to_last.push_back(axis_);
  for (int i = 0; i < x.rank(); ++i) back[size_t(to_last[size_t(i)])] = i;
  return masked_scan(x.permute(to_last)).permute(back);
}

GraphTensor cumsum(const GraphTensor& x, int axis) {
  if (x.dtype != DType::I32 && x.dtype != DType::I64 && x.dtype != DType::F32 && x.dtype != DType::F64)
    throw std::invalid_argument(fmt::format("[cumsum] x is {}, expected i32, i64, f32 or f64", dtype_name(x.dtype)));
  if (axis < 0 || axis >= x.rank())
    throw std::invalid_argument(fmt::format("[cumsum] axis {} of {} does not exist", axis, shape_string(x.dims())));
  return custom_op(std::make_shared<Cumsum>(axis), {x});
}

}  // namespace luminal::custom
