// where(cond, x, y): an exact elementwise select.
//
// The arithmetic select c * x + !c * y (detail::select) is wrong when the branch not taken holds
// an infinity or NaN (0 * inf = NaN), and attention masks are filled with -inf. Instead x and y are
// stacked along a new last axis ([..., 2], a concat: each padded with zeros and added, which
// changes no value but the sign of a zero) and flattened to [2 * numel]; one Gather then reads
// element 2 * i + (cond ? 0 : 1) for output element i. The CUDA codegen inlines all of it: the
// concat becomes a branch that evaluates only the chosen operand.
#include <stdexcept>

#include <fmt/format.h>

#include "core/tensor/helpers.h"

namespace luminal {

GraphTensor where(const GraphTensor& cond, const GraphTensor& x, const GraphTensor& y) {
  detail::check_same_graph("where", cond, x);
  detail::check_same_graph("where", x, y);
  detail::check_same_dtype("where", x, y);
  if (cond.dtype != DType::Bool) {
    throw std::invalid_argument(
        fmt::format("[where] condition must be bool, got {}", dtype_name(cond.dtype)));
  }
  auto [xb, yb] = detail::broadcast_pair("where", x, y);
  auto [c, xs] = detail::broadcast_pair("where", cond, xb);
  const GraphTensor ys = detail::broadcast_to("where", yb, xs.dims());
  const std::vector<Expr> shape = xs.dims();
  const int r = static_cast<int>(shape.size());
  const Expr n = product(shape);

  GraphTensor stacked = concat({xs.expand_dim(r, 1), ys.expand_dim(r, 1)}, r);  // [..., 2]
  GraphTensor flat = stacked.reshape({n * 2});
  // i32 indices when the stacked length provably fits, else i64 (flat offsets beyond 2^31).
  const auto len = (n * 2).as_const();
  const DType it = len && *len < (int64_t{1} << 31) ? DType::I32 : DType::I64;
  GraphTensor pos = x.graph->arange(n, it).reshape(shape);
  GraphTensor idx = pos * 2.0 + detail::logical_not(c).cast(it);
  return flat.gather(idx);
}

}  // namespace luminal
