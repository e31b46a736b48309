// Comparisons and logic: eq/ne/lt/le/gt/ge (operands promoted with torch.result_type, since the
// exported result is only Bool), logical_*, bitwise_* / __and__ / __or__ / __xor__ on Bool (and
// bitwise_not on integers), where, masked_fill, maximum/minimum, clamp. Selects use the exact
// where() of the GraphTensor API, so an -inf or NaN in the branch not taken never leaks.
#include <fmt/format.h>

#include "frontend/aten/operands.h"

namespace luminal::aten {

GraphTensor truthy(const GraphTensor& x) {
  return x.dtype == DType::Bool ? x : x.cast(DType::Bool);
}

namespace {

GraphTensor i32(const GraphTensor& b) { return b.cast(DType::I32); }

}  // namespace

GraphTensor bool_and(const GraphTensor& a, const GraphTensor& b) {
  return (i32(a) * i32(b)).cast(DType::Bool);
}

GraphTensor bool_or(const GraphTensor& a, const GraphTensor& b) {
  return (i32(a) + i32(b)).cast(DType::Bool);
}

GraphTensor bool_xor(const GraphTensor& a, const GraphTensor& b) { return i32(a).ne(i32(b)); }

GraphTensor bool_not(const GraphTensor& a) {
  const GraphTensor x = i32(a);
  return x.lt(x.graph->constant(1.0, DType::I32));
}

namespace {

// The two operands of a binary op, in their promoted dtype.
std::pair<GraphTensor, GraphTensor> promoted(AtenNode& n, const char* a_name, const char* b_name,
                                             std::optional<DType> dt = std::nullopt) {
  const Operand a = operand(n, a_name), b = operand(n, b_name);
  const DType t = dt ? *dt : result_type({a, b});
  return {as_tensor(a, t, n.graph()), as_tensor(b, t, n.graph())};
}

template <class F>
void compare(AtenNode& n, F f) {
  auto [x, y] = promoted(n, "self", "other");
  n.set_output(f(x, y));
}

// bitwise and/or/xor: Bool only (luminal has no bitwise primitives for integers).
template <class F>
void bitwise(AtenNode& n, F f) {
  const DType dt = n.out_dtype();
  if (dt != DType::Bool)
    n.fail(
        fmt::format("bitwise ops on {} are not supported (only on bool tensors)", dtype_name(dt)));
  auto [x, y] = promoted(n, "self", "other", DType::Bool);
  n.set_output(f(x, y));
}

template <class F>
void logical(AtenNode& n, F f) {
  const GraphTensor x = n.tensor("self"), y = n.tensor("other");
  n.set_output(f(truthy(x), truthy(y)));
}

GraphTensor condition(AtenNode& n, const char* name) { return truthy(n.tensor(name)); }

}  // namespace

void lower_eq(AtenNode& n) {
  compare(n, [](const GraphTensor& x, const GraphTensor& y) { return x.eq(y); });
}
void lower_ne(AtenNode& n) {
  compare(n, [](const GraphTensor& x, const GraphTensor& y) { return x.ne(y); });
}
void lower_lt(AtenNode& n) {
  compare(n, [](const GraphTensor& x, const GraphTensor& y) { return x.lt(y); });
}
void lower_le(AtenNode& n) {
  compare(n, [](const GraphTensor& x, const GraphTensor& y) { return x.le(y); });
}
void lower_gt(AtenNode& n) {
  compare(n, [](const GraphTensor& x, const GraphTensor& y) { return x.gt(y); });
}
void lower_ge(AtenNode& n) {
  compare(n, [](const GraphTensor& x, const GraphTensor& y) { return x.ge(y); });
}

void lower_logical_not(AtenNode& n) { n.set_output(bool_not(truthy(n.tensor("self")))); }
void lower_logical_and(AtenNode& n) { logical(n, bool_and); }
void lower_logical_or(AtenNode& n) { logical(n, bool_or); }
void lower_logical_xor(AtenNode& n) { logical(n, bool_xor); }

void lower_bitwise_and(AtenNode& n) { bitwise(n, bool_and); }
void lower_bitwise_or(AtenNode& n) { bitwise(n, bool_or); }
void lower_bitwise_xor(AtenNode& n) { bitwise(n, bool_xor); }

// ~x: not for Bool; -1 - x (255 - x for u8) for integers, which is two's complement ~x exactly.
void lower_bitwise_not(AtenNode& n) {
  const GraphTensor x = n.tensor("self");
  if (x.dtype == DType::Bool) return n.set_output(bool_not(x));
  if (!is_integer(x.dtype))
    n.fail(fmt::format("bitwise_not needs a bool or integer tensor, got {}", dtype_name(x.dtype)));
  const double m = x.dtype == DType::U8 ? 255.0 : -1.0;
  n.set_output(x * m + m);
}

// where.self / .ScalarSelf / .ScalarOther / .Scalar (condition, self, other).
void lower_where(AtenNode& n) {
  auto [x, y] = promoted(n, "self", "other", n.out_dtype());
  n.set_output(where(condition(n, "condition"), x, y));
}

// masked_fill.Scalar / .Tensor (self, mask, value): value where mask, else self.
void lower_masked_fill(AtenNode& n) {
  const GraphTensor self = n.tensor("self");
  const Operand v = operand(n, "value");
  if (v.tensor && v.tensor->rank() != 0)
    n.fail(
        fmt::format("value must be a 0-dim tensor, got shape {}", shape_string(v.tensor->dims())));
  const DType dt = n.out_dtype();
  const GraphTensor x = self.dtype == dt ? self : self.cast(dt);
  n.set_output(where(condition(n, "mask"), as_tensor(v, dt, self), x));
}

void lower_maximum(AtenNode& n) {
  auto [x, y] = promoted(n, "self", "other", n.out_dtype());
  n.set_output(x.maximum(y));
}

void lower_minimum(AtenNode& n) {
  auto [x, y] = promoted(n, "self", "other", n.out_dtype());
  n.set_output(x.minimum(y));
}

// clamp / clamp.Tensor (self, min=None, max=None), clamp_min, clamp_max: min(max(x, lo), hi) in
// the exported result dtype (so lo > hi gives hi, and NaN in x stays NaN, as in torch).
void lower_clamp(AtenNode& n) {
  const DType dt = n.out_dtype();
  const GraphTensor self = n.tensor("self");
  GraphTensor x = self.dtype == dt ? self : self.cast(dt);
  const bool has_lo = n.has("min"), has_hi = n.has("max");
  if (!has_lo && !has_hi) n.fail("at least one of min and max must be given");
  if (has_lo) x = x.maximum(as_tensor(operand(n, "min"), dt, self));
  if (has_hi) x = x.minimum(as_tensor(operand(n, "max"), dt, self));
  n.set_output(x);
}

}  // namespace luminal::aten
