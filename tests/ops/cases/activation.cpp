// Activations: relu, sigmoid, silu/swish, gelu (tanh approximation), tanh against PyTorch
// fixtures, plus reduced-precision paths by hand.
#include <cmath>

#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

double sigmoid_ref(double v) { return 1 / (1 + std::exp(-v)); }

}  // namespace

LUMINAL_OP_CASE(ReluCase, fixture) {
  return fixture_unary(g, "relu", [](const GraphTensor& x) { return x.relu(); });
}
LUMINAL_OP_CASE(SigmoidCase, fixture) {
  return fixture_unary(g, "sigmoid", [](const GraphTensor& x) { return x.sigmoid(); });
}
LUMINAL_OP_CASE(SiluCase, fixture) {
  return fixture_unary(g, "silu", [](const GraphTensor& x) { return x.silu(); });
}
LUMINAL_OP_CASE(SwishCase, fixture) {
  return fixture_unary(g, "silu", [](const GraphTensor& x) { return x.swish(); });
}
LUMINAL_OP_CASE(GeluCase, fixture) {
  return fixture_unary(g, "gelu", [](const GraphTensor& x) { return x.gelu(); });
}
LUMINAL_OP_CASE(TanhCase, fixture) {
  return fixture_unary(g, "tanh", [](const GraphTensor& x) { return x.tanh(); });
}

LUMINAL_OP_CASE(ReluCase, hand_edges) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {5}), {-1e-30, 0, 1e-30, -7, 7});
  io.out(x.relu(), {0, 0, static_cast<float>(1e-30), 0, 7});
  return io;
}

LUMINAL_OP_CASE(SigmoidCase, f16) {
  CaseIO io;
  std::vector<double> x = quantize({-4, -0.5, 0, 0.7, 6}, DType::F16);
  GraphTensor t = io.in(g.named_tensor("x", {5}, DType::F16), x);
  io.out(t.sigmoid(), map1(x, sigmoid_ref));
  return io;
}

LUMINAL_OP_CASE(SigmoidCase, saturates) {
  // Large |x| must give 0 and 1, not NaN (exp overflow in a naive form).
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {4}), {-100, -30, 30, 100});
  io.out(x.sigmoid(), map1({-100, -30, 30, 100}, sigmoid_ref));
  return io;
}

LUMINAL_OP_CASE(TanhCase, saturates) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {4}), {-50, -1e-4, 1e-4, 50});
  io.out(x.tanh(),
         map1(quantize({-50, -1e-4, 1e-4, 50}, DType::F32), [](double v) { return std::tanh(v); }));
  return io;
}

LUMINAL_OP_CASE(GeluCase, bf16) {
  CaseIO io;
  std::vector<double> x = quantize({-3, -0.5, 0.25, 2}, DType::BF16);
  GraphTensor t = io.in(g.named_tensor("x", {4}, DType::BF16), x);
  // PyTorch's tanh approximation: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  io.out(t.gelu(), map1(x, [](double v) {
           return 0.5 * v * (1 + std::tanh(std::sqrt(2 / M_PI) * (v + 0.044715 * v * v * v)));
         }));
  return io;
}

}  // namespace luminal::ops_test

namespace luminal::ops_test {

// erf's bound is 1.2e-7 absolute on the reference (src/core/tensor/erf.cpp); 2e-7 leaves a CUDA
// exp2f (2 ulp) its margin. The grid straddles the |x| = 1 branch switch.
LUMINAL_OP_CASE_TOL(ErfCase, grid, 2e-7, 0) {
  CaseIO io;
  std::vector<double> x = quantize(ramp(161, -4.0, 0.05), DType::F32);
  x.insert(x.end(), {-1.0000001, -0.9999999, 0.9999999, 1.0000001, 1e-30, -1e-6, 9.5, -30});
  GraphTensor t = io.in(g.named_tensor("x", {static_cast<int64_t>(x.size())}), x);
  io.out(t.erf(), map1(quantize(x, DType::F32), [](double v) { return std::erf(v); }));
  return io;
}

LUMINAL_OP_CASE(ErfCase, infinities) {
  CaseIO io;
  GraphTensor t = io.in(g.named_tensor("x", {3}), {-INFINITY, 0, INFINITY});
  io.out(t.erf(), {-1, 0, 1});
  return io;
}

LUMINAL_OP_CASE(ErfCase, f16) {
  CaseIO io;
  std::vector<double> x = quantize({-2.5, -0.7, 0.1, 1.3}, DType::F16);
  GraphTensor t = io.in(g.named_tensor("x", {4}, DType::F16), x);
  io.out(t.erf(), map1(x, [](double v) { return std::erf(v); }));
  return io;
}

// erfc keeps relative accuracy in the tail (erfc(9) = 4e-37), where 1 - erf(x) would be 0.
LUMINAL_OP_CASE_TOL(ErfcCase, tail_relative, 0, 2e-5) {
  CaseIO io;
  std::vector<double> x = quantize({-3, -1, -0.5, 0, 0.5, 1, 2, 4, 6, 9}, DType::F32);
  GraphTensor t = io.in(g.named_tensor("x", {10}), x);
  io.out(t.erfc(), map1(x, [](double v) { return std::erfc(v); }));
  return io;
}

LUMINAL_OP_CASE_TOL(GeluErfCase, grid, 2e-7, 1e-6) {
  CaseIO io;
  std::vector<double> x = quantize(ramp(121, -6.0, 0.1), DType::F32);
  GraphTensor t = io.in(g.named_tensor("x", {121}), x);
  io.out(t.gelu_erf(), map1(x, [](double v) { return 0.5 * v * std::erfc(-v / std::sqrt(2.0)); }));
  return io;
}

LUMINAL_OP_CASE(GeluErfCase, bf16) {
  CaseIO io;
  std::vector<double> x = quantize({-3, -0.5, 0.25, 2}, DType::BF16);
  GraphTensor t = io.in(g.named_tensor("x", {4}, DType::BF16), x);
  io.out(t.gelu_erf(),
         map1(x, [](double v) { return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0))); }));
  return io;
}

}  // namespace luminal::ops_test
