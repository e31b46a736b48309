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
