// Unary math: the primitives Exp2, Log2, Sin, Sqrt, Recip and their decompositions; cast.
#include <numbers>

#include <fmt/format.h>

#include "core/tensor/helpers.h"

namespace luminal {

namespace {

GraphTensor float_unary(OpKind kind, std::string_view op, const GraphTensor& x) {
  detail::graph_of(x, op);
  detail::require_float(op, x);
  return detail::unary(kind, x, x.dtype);
}

}  // namespace

GraphTensor GraphTensor::exp2() const { return float_unary(OpKind::Exp2, "exp2", *this); }

GraphTensor GraphTensor::log2() const { return float_unary(OpKind::Log2, "log2", *this); }

GraphTensor GraphTensor::sin() const { return float_unary(OpKind::Sin, "sin", *this); }

GraphTensor GraphTensor::sqrt() const { return float_unary(OpKind::Sqrt, "sqrt", *this); }

GraphTensor GraphTensor::recip() const { return float_unary(OpKind::Recip, "recip", *this); }

// exp(x) = exp2(x * log2(e)).
GraphTensor GraphTensor::exp() const {
  detail::require_float("exp", *this);
  return (*this * std::numbers::log2e).exp2();
}

// log(x) = log2(x) * ln(2).
GraphTensor GraphTensor::log() const {
  detail::require_float("log", *this);
  return log2() * std::numbers::ln2;
}

// cos(x) = 1 - 2 sin(x / 2)^2. Not sin(x + pi/2): rounding x + pi/2 to the dtype costs up to
// half an ulp of x in the angle (0.0002 for f32 x near 4096, rotary-embedding positions).
GraphTensor GraphTensor::cos() const {
  detail::require_float("cos", *this);
  const GraphTensor s = (*this * 0.5).sin();
  return 1.0 - s * s * 2.0;
}

// |x| = x * (cast(x > 0) - cast(x < 0)).
GraphTensor GraphTensor::abs() const {
  detail::graph_of(*this, "abs");
  if (dtype == DType::Bool || dtype == DType::U8) return *this;  // already non-negative
  GraphTensor sign = gt(0.0).cast(dtype) - lt(0.0).cast(dtype);
  return *this * sign;
}

// x ** e = exp2(e * log2(x)): defined for positive bases only (log2 of a negative base is NaN).
GraphTensor GraphTensor::pow(double e) const {
  detail::require_float("pow", *this);
  return (log2() * e).exp2();
}

GraphTensor GraphTensor::pow(const GraphTensor& e) const {
  detail::check_same_graph("pow", *this, e);
  detail::check_same_dtype("pow", *this, e);
  detail::require_float("pow", *this);
  auto [x, y] = detail::broadcast_pair("pow", *this, e);
  return (y * x.log2()).exp2();
}

// A Cast to the same dtype is a materializing copy (contiguous() relies on it).
GraphTensor GraphTensor::cast(DType dt) const {
  detail::graph_of(*this, "cast");
  return detail::unary(OpKind::Cast, *this, dt);
}

}  // namespace luminal
