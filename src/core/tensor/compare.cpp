// Comparisons (built on LessThan), select, maximum and minimum.
//
// NaN note: le/ge/eq/ne are negations of LessThan results, so with a NaN operand le, ge and eq
// yield true where IEEE comparisons yield false.
#include <stdexcept>

#include <fmt/format.h>

#include "core/tensor/helpers.h"

namespace luminal {
namespace detail {

GraphTensor logical_not(const GraphTensor& c) {
  GraphTensor i = c.cast(DType::I32);
  return binary(OpKind::LessThan, "not", i, scalar_like(i, 1.0), DType::Bool);
}

GraphTensor select(const GraphTensor& c, const GraphTensor& x, const GraphTensor& y) {
  // Two products instead of y + c * (x - y): x - y can overflow for large finite values.
  return c.cast(x.dtype) * x + logical_not(c).cast(x.dtype) * y;
}

}  // namespace detail

namespace {

// Broadcasts both operands after checking graph and dtype, tagging errors with `op`.
std::pair<GraphTensor, GraphTensor> prepare(std::string_view op, const GraphTensor& a,
                                            const GraphTensor& b) {
  detail::check_same_graph(op, a, b);
  detail::check_same_dtype(op, a, b);
  return detail::broadcast_pair(op, a, b);
}

// cast(a < b, i32) + cast(b < a, i32): 0 exactly when a == b.
GraphTensor differ_count(const GraphTensor& a, const GraphTensor& b) {
  return a.lt(b).cast(DType::I32) + b.lt(a).cast(DType::I32);
}

}  // namespace

GraphTensor GraphTensor::lt(const GraphTensor& o) const {
  return detail::binary(OpKind::LessThan, "less_than", *this, o, DType::Bool);
}

GraphTensor GraphTensor::gt(const GraphTensor& o) const {
  auto [x, y] = prepare("gt", *this, o);
  return y.lt(x);
}

GraphTensor GraphTensor::le(const GraphTensor& o) const {
  auto [x, y] = prepare("le", *this, o);
  return detail::logical_not(y.lt(x));
}

GraphTensor GraphTensor::ge(const GraphTensor& o) const {
  auto [x, y] = prepare("ge", *this, o);
  return detail::logical_not(x.lt(y));
}

GraphTensor GraphTensor::eq(const GraphTensor& o) const {
  auto [x, y] = prepare("eq", *this, o);
  return differ_count(x, y).lt(detail::scalar_like(x, 1.0, DType::I32));
}

GraphTensor GraphTensor::ne(const GraphTensor& o) const {
  auto [x, y] = prepare("ne", *this, o);
  GraphTensor d = differ_count(x, y);
  return detail::scalar_like(d, 0.0).lt(d);
}

GraphTensor GraphTensor::lt(double s) const { return lt(detail::scalar_like(*this, s)); }

GraphTensor GraphTensor::gt(double s) const { return gt(detail::scalar_like(*this, s)); }

// Stacks both operands along a new last axis of size 2 (via zero padding and one Add) and takes
// MaxReduce over it: exact for every value, infinities included.
GraphTensor GraphTensor::maximum(const GraphTensor& o) const {
  auto [x, y] = prepare("maximum", *this, o);
  const int r = x.rank();
  GraphTensor xs = x.expand_dim(r, 1).pad(r, 0, 1);
  GraphTensor ys = y.expand_dim(r, 1).pad(r, 1, 0);
  return (xs + ys).max(r);
}

// Floats and signed integers: -maximum(-a, -b) (exact). Unsigned and bool: select(a < b, a, b).
GraphTensor GraphTensor::minimum(const GraphTensor& o) const {
  auto [x, y] = prepare("minimum", *this, o);
  if (dtype == DType::U8 || dtype == DType::Bool) return detail::select(x.lt(y), x, y);
  return -((-x).maximum(-y));
}

}  // namespace luminal
