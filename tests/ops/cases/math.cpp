// GraphTensor math API: exp, log, sin, cos, sqrt, pow against PyTorch fixtures; exp2, log2,
// recip, abs and the cast API by hand; f16 paths from quantized inputs.
#include <cmath>

#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

/// x [n] of dtype dt -> f(x) vs ref applied (in double) to the stored x.
template <class F>
CaseIO hand_unary(Graph& g, DType dt, std::vector<double> x, F f, double (*ref)(double)) {
  CaseIO io;
  x = quantize(std::move(x), dt);
  GraphTensor t = io.in(g.named_tensor("x", {static_cast<int64_t>(x.size())}, dt), x);
  io.out(f(t), map1(x, ref));
  return io;
}

}  // namespace

LUMINAL_OP_CASE(ExpCase, fixture) {
  return fixture_unary(g, "exp", [](const GraphTensor& x) { return x.exp(); });
}
LUMINAL_OP_CASE(LogCase, fixture) {
  return fixture_unary(g, "log", [](const GraphTensor& x) { return x.log(); });
}
LUMINAL_OP_CASE(SinCase, api_fixture) {
  return fixture_unary(g, "sin", [](const GraphTensor& x) { return x.sin(); });
}
LUMINAL_OP_CASE(CosCase, fixture) {
  return fixture_unary(g, "cos", [](const GraphTensor& x) { return x.cos(); });
}
LUMINAL_OP_CASE(SqrtCase, api_fixture) {
  return fixture_unary(g, "sqrt", [](const GraphTensor& x) { return x.sqrt(); });
}
LUMINAL_OP_CASE(PowCase, scalar_fixture) {
  return fixture_unary(g, "pow_scalar", [](const GraphTensor& x) { return x.pow(2.5); });
}
LUMINAL_OP_CASE(PowCase, tensor_fixture) {
  CaseIO io;
  GraphTensor x = fixture_input(g, io, "pow_tensor.x");
  GraphTensor e = fixture_input(g, io, "pow_tensor.e");
  io.out(x.pow(e), fixture("pow_tensor.out").values);
  return io;
}

LUMINAL_OP_CASE(ExpCase, f16) {
  return hand_unary(
      g, DType::F16, {-2, 0, 0.5, 3}, [](const GraphTensor& x) { return x.exp(); },
      [](double v) { return std::exp(v); });
}
LUMINAL_OP_CASE(LogCase, bf16) {
  return hand_unary(
      g, DType::BF16, {0.5, 1, 3, 100}, [](const GraphTensor& x) { return x.log(); },
      [](double v) { return std::log(v); });
}
LUMINAL_OP_CASE(CosCase, f64) {
  return hand_unary(
      g, DType::F64, {0, 1, -2.5}, [](const GraphTensor& x) { return x.cos(); },
      [](double v) { return std::cos(v); });
}
LUMINAL_OP_CASE(CosCase, large_angles_f32) {
  // Rotary-embedding angles: sin(x + pi/2) would lose up to half an ulp of x (2e-4 here).
  return hand_unary(
      g, DType::F32, {4096.3, 1000.7, -3000.1, 0.001, 65000.5},
      [](const GraphTensor& x) { return x.cos(); }, [](double v) { return std::cos(v); });
}
LUMINAL_OP_CASE(Exp2Case, api) {
  return hand_unary(
      g, DType::F32, {-3, 0, 1.5, 7}, [](const GraphTensor& x) { return x.exp2(); },
      [](double v) { return std::exp2(v); });
}
LUMINAL_OP_CASE(Log2Case, api) {
  return hand_unary(
      g, DType::F32, {0.125, 1, 5, 4096}, [](const GraphTensor& x) { return x.log2(); },
      [](double v) { return std::log2(v); });
}
LUMINAL_OP_CASE(RecipCase, api) {
  return hand_unary(
      g, DType::F32, {-8, 0.25, 3, 1e-3}, [](const GraphTensor& x) { return x.recip(); },
      [](double v) { return 1 / v; });
}
LUMINAL_OP_CASE(AbsCase, f32) {
  return hand_unary(
      g, DType::F32, {-3.5, 0, 2, -1e-3}, [](const GraphTensor& x) { return x.abs(); },
      [](double v) { return std::abs(v); });
}
LUMINAL_OP_CASE(AbsCase, i32) {
  return hand_unary(
      g, DType::I32, {-7, 0, 5}, [](const GraphTensor& x) { return x.abs(); },
      [](double v) { return std::abs(v); });
}
LUMINAL_OP_CASE(PowCase, hand_integer_exponent) {
  return hand_unary(
      g, DType::F32, {0.5, 2, 3}, [](const GraphTensor& x) { return x.pow(3.0); },
      [](double v) { return v * v * v; });
}

LUMINAL_OP_CASE(CastCase, api_f16_fixture) {
  return fixture_unary(g, "cast_f16", [](const GraphTensor& x) { return x.cast(DType::F16); });
}
LUMINAL_OP_CASE(CastCase, api_bf16_fixture) {
  return fixture_unary(g, "cast_bf16",
                       [](const GraphTensor& x) { return x.as_dtype(DType::BF16); });
}
LUMINAL_OP_CASE(CastCase, api_f32_i32_f32) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {4}), {-1.9, 1.9, 2.5, -0.1});
  io.out(x.cast(DType::I32).cast(DType::F32), {-1, 1, 2, 0});
  return io;
}
LUMINAL_OP_CASE(CastCase, api_bool_to_i64) {
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {3}), {1, 5, -2});
  io.out(a.gt(0.0).cast(DType::I64), {1, 1, 0});
  return io;
}

}  // namespace luminal::ops_test
