// Comparisons (built on LessThan), select, maximum and minimum.
//
// NaN: LessThan is IEEE (false with a NaN operand). le/ge/eq/ne on floats also test that neither
// operand is NaN (x is a number iff x < inf or -inf < x), so they match IEEE and PyTorch: with a
// NaN operand le, ge and eq are false and ne is true.
#include <limits>
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

GraphTensor count(const GraphTensor& c) { return c.cast(DType::I32); }

// 1 where a or b is NaN, else 0 (i32; all zeros for non-float dtypes).
GraphTensor nan_count(const GraphTensor& a, const GraphTensor& b) {
  if (!is_float(a.dtype)) return detail::scalar_like(a, 0.0, DType::I32);
  const double inf = std::numeric_limits<double>::infinity();
  auto number = [&](const GraphTensor& x) {  // 1 or 2 for a number, 0 for NaN
    return count(x.lt(detail::scalar_like(x, inf))) + count(detail::scalar_like(x, -inf).lt(x));
  };
  return count((number(a) * number(b)).lt(detail::scalar_like(a, 1.0, DType::I32)));
}

// cast(a < b) + cast(b < a) + nan_count(a, b) (i32): 0 exactly when a == b (IEEE).
GraphTensor differ_count(const GraphTensor& a, const GraphTensor& b) {
  return count(a.lt(b)) + count(b.lt(a)) + nan_count(a, b);
}

// x <= y: neither y < x nor a NaN operand.
GraphTensor less_equal(const GraphTensor& x, const GraphTensor& y) {
  GraphTensor bad = count(y.lt(x)) + nan_count(x, y);
  return bad.lt(detail::scalar_like(bad, 1.0));
}

// ~x = -1 - x: an order-reversing bijection on every integer dtype that never overflows
// (unlike -x at INT_MIN); for U8 it is 255 - x.
GraphTensor bit_not(const GraphTensor& x) {
  const double m = x.dtype == DType::U8 ? 255.0 : -1.0;
  return x * m + m;
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
  return less_equal(x, y);
}

GraphTensor GraphTensor::ge(const GraphTensor& o) const {
  auto [x, y] = prepare("ge", *this, o);
  return less_equal(y, x);
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

// Floats: -maximum(-a, -b). Integers: ~maximum(~a, ~b) (-a would overflow at INT_MIN). Bool:
// select(a < b, a, b). All exact.
GraphTensor GraphTensor::minimum(const GraphTensor& o) const {
  auto [x, y] = prepare("minimum", *this, o);
  if (dtype == DType::Bool) return detail::select(x.lt(y), x, y);
  if (is_integer(dtype)) return bit_not(bit_not(x).maximum(bit_not(y)));
  return -((-x).maximum(-y));
}

}  // namespace luminal
