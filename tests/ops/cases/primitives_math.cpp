// Primitive cases built from raw nodes: the unary math ops and the elementwise binary ops.
// Expectations are hand-computed (libm in double on the exact stored inputs).
#include <cmath>
#include <numbers>

#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

/// Input -> unary primitive k -> Output.
CaseIO unary(Graph& g, OpKind k, DType dt, const std::vector<double>& vals,
             std::vector<double> want) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {static_cast<int64_t>(vals.size())}, dt), vals);
  io.out(prim_output(g, prim(g, k, dt, {x}, x.dims())), std::move(want));
  return io;
}

/// Inputs a, b of shape [n] -> binary primitive k (result dtype out) -> Output.
CaseIO binary(Graph& g, OpKind k, DType dt, DType out, const std::vector<double>& a,
              const std::vector<double>& b, std::vector<double> want) {
  CaseIO io;
  Expr n = static_cast<int64_t>(a.size());
  GraphTensor ta = io.in(g.named_tensor("a", {n}, dt), a);
  GraphTensor tb = io.in(g.named_tensor("b", {n}, dt), b);
  io.out(prim_output(g, prim(g, k, out, {ta, tb}, {n})), std::move(want));
  return io;
}

constexpr double kPi = std::numbers::pi;

}  // namespace

LUMINAL_OP_CASE(Exp2Case, f32) {
  return unary(g, OpKind::Exp2, DType::F32, {-2, 0, 0.5, 3, 10},
               {0.25, 1, std::sqrt(2.0), 8, 1024});
}
LUMINAL_OP_CASE(Exp2Case, f16) {
  return unary(g, OpKind::Exp2, DType::F16, {-1, 0, 2, 3.5}, {0.5, 1, 4, std::exp2(3.5)});
}
LUMINAL_OP_CASE(Exp2Case, f64) {
  return unary(g, OpKind::Exp2, DType::F64, {0.5, -0.5, 0.1},
               {std::sqrt(2.0), 1 / std::sqrt(2.0), std::exp2(0.1)});
}
LUMINAL_OP_CASE(Log2Case, f32) {
  return unary(g, OpKind::Log2, DType::F32, {0.25, 1, 2, 10, 1024},
               {-2, 0, 1, 3.321928094887362, 10});
}
LUMINAL_OP_CASE(Log2Case, bf16) {
  return unary(g, OpKind::Log2, DType::BF16, {0.5, 4, 8, 3}, {-1, 2, 3, std::log2(3.0)});
}
LUMINAL_OP_CASE(SinCase, f32) {
  std::vector<double> x = quantize({0, kPi / 6, kPi / 2, -1, 3}, DType::F32);
  return unary(g, OpKind::Sin, DType::F32, x, {0, 0.5, 1, -0.8414709848078965, 0.1411200080598672});
}
LUMINAL_OP_CASE(SinCase, f64) {
  return unary(g, OpKind::Sin, DType::F64, {kPi / 6, 2}, {0.5, std::sin(2.0)});
}
LUMINAL_OP_CASE(SqrtCase, f32) {
  return unary(g, OpKind::Sqrt, DType::F32, {0, 1, 2, 9, 0.25}, {0, 1, 1.4142135623730951, 3, 0.5});
}
LUMINAL_OP_CASE(SqrtCase, f16) {
  return unary(g, OpKind::Sqrt, DType::F16, {4, 2, 0.25}, {2, std::sqrt(2.0), 0.5});
}
LUMINAL_OP_CASE(RecipCase, f32) {
  return unary(g, OpKind::Recip, DType::F32, {1, 2, -4, 0.5, 3}, {1, 0.5, -0.25, 2, 1.0 / 3});
}
LUMINAL_OP_CASE(RecipCase, bf16) {
  return unary(g, OpKind::Recip, DType::BF16, {4, -0.5, 3}, {0.25, -2, 1.0 / 3});
}

LUMINAL_OP_CASE(AddCase, f32) {
  return binary(g, OpKind::Add, DType::F32, DType::F32, {1, -2.5, 3, 1e6}, {0.5, 2.5, -7, 1},
                {1.5, 0, -4, 1000001});
}
LUMINAL_OP_CASE(AddCase, i32) {
  return binary(g, OpKind::Add, DType::I32, DType::I32, {1, -2, 2147483640}, {-5, -2, 7},
                {-4, -4, 2147483647});
}
LUMINAL_OP_CASE(AddCase, i64) {
  return binary(g, OpKind::Add, DType::I64, DType::I64, {4294967296.0, -1}, {4294967296.0, 1},
                {8589934592.0, 0});
}
LUMINAL_OP_CASE(AddCase, f16) {
  return binary(g, OpKind::Add, DType::F16, DType::F16, {0.5, 1024, -3}, {0.25, 1, 1.5},
                {0.75, 1025, -1.5});
}

LUMINAL_OP_CASE(AddCase, broadcast_view) {
  // b [3] read through a stride-0 view as [2, 3].
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {2, 3}), {1, 2, 3, 4, 5, 6});
  GraphTensor b = io.in(g.named_tensor("b", {3}), {10, 20, 30});
  GraphTensor bb = with_view(b, b.view.expand(0, 2));
  io.out(prim_output(g, prim(g, OpKind::Add, DType::F32, {a, bb}, {2, 3})),
         {11, 22, 33, 14, 25, 36});
  return io;
}

LUMINAL_OP_CASE(AddCase, permuted_and_sliced_views) {
  // out[i, j] = a[j, i] + b[i, j + 1] with a [3, 2] transposed and b [2, 4] sliced on axis 1.
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {3, 2}), {1, 2, 3, 4, 5, 6});
  GraphTensor b = io.in(g.named_tensor("b", {2, 4}), {10, 20, 30, 40, 50, 60, 70, 80});
  std::vector<int> order{1, 0};
  GraphTensor at = with_view(a, a.view.permute(order));
  GraphTensor bs = with_view(b, b.view.slice(1, 1, 4));
  io.out(prim_output(g, prim(g, OpKind::Add, DType::F32, {at, bs}, {2, 3})),
         {21, 33, 45, 62, 74, 86});
  return io;
}

LUMINAL_OP_CASE(MulCase, f32) {
  return binary(g, OpKind::Mul, DType::F32, DType::F32, {1.5, -2, 0, 3}, {2, 4, 5, -0.5},
                {3, -8, 0, -1.5});
}
LUMINAL_OP_CASE(MulCase, i64) {
  return binary(g, OpKind::Mul, DType::I64, DType::I64, {65536, -3}, {65536, 7},
                {4294967296.0, -21});
}
LUMINAL_OP_CASE(MulCase, constant_broadcast) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 2}), {1, -2, 3, 4});
  GraphTensor c = prim(g, OpKind::Constant, DType::F32, {}, {}, 0.5);
  GraphTensor cb = with_view(c, c.view.expand(0, 2).expand(0, 2));
  io.out(prim_output(g, prim(g, OpKind::Mul, DType::F32, {x, cb}, {2, 2})), {0.5, -1, 1.5, 2});
  return io;
}

LUMINAL_OP_CASE(ModCase, i32_c_semantics) {
  // C remainder: the sign follows the dividend (-7 % 3 == -1, 7 % -3 == 1).
  return binary(g, OpKind::Mod, DType::I32, DType::I32, {-7, 7, -7, 7, 0, 9}, {3, 3, -3, -3, 5, 4},
                {-1, 1, -1, 1, 0, 1});
}
LUMINAL_OP_CASE(ModCase, i64) {
  return binary(g, OpKind::Mod, DType::I64, DType::I64, {10000000007.0, -10}, {1000000000, 4},
                {7, -2});
}
LUMINAL_OP_CASE(ModCase, f32_fmod) {
  return binary(g, OpKind::Mod, DType::F32, DType::F32, {-7.5, 7.5, 5.25, -0.5}, {2, -2, 1.5, 3},
                {-1.5, 1.5, 0.75, -0.5});
}

LUMINAL_OP_CASE(LessThanCase, f32) {
  return binary(g, OpKind::LessThan, DType::F32, DType::Bool, {1, 2, 3, -1, -0.0},
                {2, 2, 2, -0.5, 0}, {1, 0, 0, 1, 0});
}
LUMINAL_OP_CASE(LessThanCase, i32) {
  return binary(g, OpKind::LessThan, DType::I32, DType::Bool, {-5, 5, 0}, {-4, -5, 0}, {1, 0, 0});
}
LUMINAL_OP_CASE(LessThanCase, i64) {
  return binary(g, OpKind::LessThan, DType::I64, DType::Bool, {4294967296.0, 1}, {4294967297.0, 1},
                {1, 0});
}

}  // namespace luminal::ops_test
