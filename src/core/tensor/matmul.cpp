// matmul as one Mul and one SumReduce over broadcast views.
//
// CANONICAL FORM (the CUDA lowering pattern-matches it; do not change it casually):
//   for A [..., M, K] and B [..., K, N]
//     a   = A.expand_dim(rank - 1, N)                     -> [..., M, N, K]  (stride 0 over N)
//     b   = B.transpose(-1, -2).expand_dim(rank - 2, M)   -> [..., M, N, K]  (stride 0 over M)
//     out = (a * b).sum(last axis)                        -> [..., M, N]
//   Leading batch dims broadcast numpy-style by expand (never copied). 1-D operands get a size-1
//   M (vector @ matrix) or N (matrix @ vector) dim added as a view; it is dropped from the result
//   by re-viewing the contiguous output (no copy).
#include <stdexcept>

#include <fmt/format.h>

#include "core/tensor/helpers.h"

namespace luminal {

namespace {

// Broadcasts the batch dims (all but the last two) of a and b to a common shape.
std::pair<GraphTensor, GraphTensor> broadcast_batch(const GraphTensor& a, const GraphTensor& b) {
  const int ra = a.rank() - 2, rb = b.rank() - 2, r = std::max(ra, rb);
  std::vector<Expr> batch(r);
  for (int i = 0; i < r; ++i) {
    const int ia = i - (r - ra), ib = i - (r - rb);
    if (ia < 0) {
      batch[i] = b.dims()[ib];
    } else if (ib < 0 || a.dims()[ia].same(b.dims()[ib]) || b.dims()[ib].as_const() == 1) {
      batch[i] = a.dims()[ia];
    } else if (a.dims()[ia].as_const() == 1) {
      batch[i] = b.dims()[ib];
    } else {
      throw std::invalid_argument(fmt::format("[matmul] batch dims of {} and {} do not broadcast",
                                              shape_string(a.dims()), shape_string(b.dims())));
    }
  }
  auto full = [&](const GraphTensor& t) {
    std::vector<Expr> s = batch;
    s.push_back(t.dims()[t.rank() - 2]);
    s.push_back(t.dims()[t.rank() - 1]);
    return detail::broadcast_to("matmul", t, s);
  };
  return {full(a), full(b)};
}

}  // namespace

GraphTensor GraphTensor::matmul(const GraphTensor& o) const {
  detail::check_same_graph("matmul", *this, o);
  detail::check_same_dtype("matmul", *this, o);
  for (const GraphTensor* t : {this, &o}) {
    // 5-D covers grouped-query attention's [batch, kv_heads, group, seq, dim] without copies.
    if (t->rank() < 1 || t->rank() > 5) {
      throw std::invalid_argument(
          fmt::format("[matmul] operands must be 1-D to 5-D, got {}", shape_string(t->dims())));
    }
  }
  const bool vec_a = rank() == 1, vec_b = o.rank() == 1;
  GraphTensor a = vec_a ? expand_dim(0, 1) : *this;  // [K] -> [1, K]
  GraphTensor b = vec_b ? o.expand_dim(1, 1) : o;    // [K] -> [K, 1]
  const Expr& k_a = a.dims()[a.rank() - 1];
  const Expr& k_b = b.dims()[b.rank() - 2];
  if (!k_a.same(k_b)) {
    throw std::invalid_argument(
        fmt::format("[matmul] inner dims {} vs {}", k_a.to_string(), k_b.to_string()));
  }
  std::tie(a, b) = broadcast_batch(a, b);
  const int r = a.rank();
  const Expr m = a.dims()[r - 2], n = b.dims()[r - 1];
  GraphTensor lhs = a.expand_dim(r - 1, n);                          // [..., M, N, K]
  GraphTensor rhs = b.transpose(r - 1, r - 2).expand_dim(r - 2, m);  // [..., M, N, K]
  GraphTensor out = (lhs * rhs).sum(r);                              // [..., M, N]
  if (!vec_a && !vec_b) return out;
  std::vector<Expr> dims = out.dims();
  if (vec_b) dims.erase(dims.end() - 1);
  if (vec_a) dims.erase(dims.end() - (vec_b ? 1 : 2));
  out.view = ShapeTracker::contiguous(std::move(dims));  // the output node is contiguous
  return out;
}

}  // namespace luminal
