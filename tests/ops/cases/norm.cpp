// softmax, layer_norm and rms_norm against PyTorch fixtures (3-D inputs, several axes), plus
// hand-computed numerically demanding inputs.
#include <cmath>

#include "ops/cases/case_util.h"

namespace luminal::ops_test {

LUMINAL_OP_CASE(SoftmaxCase, axis0) {
  return fixture_unary(g, "softmax_axis0", [](const GraphTensor& x) { return x.softmax(0); });
}
LUMINAL_OP_CASE(SoftmaxCase, axis1) {
  return fixture_unary(g, "softmax_axis1", [](const GraphTensor& x) { return x.softmax(1); });
}
LUMINAL_OP_CASE(SoftmaxCase, axis2) {
  return fixture_unary(g, "softmax_axis2", [](const GraphTensor& x) { return x.softmax(2); });
}
LUMINAL_OP_CASE(SoftmaxCase, axis_neg1) {
  return fixture_unary(g, "softmax_axis2", [](const GraphTensor& x) { return x.softmax(-1); });
}

LUMINAL_OP_CASE(SoftmaxCase, large_logits) {
  // exp(1000) overflows f32: only a max-subtracted softmax gets this right.
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 3}), {1000, 1001, 1002, -1000, -1000, -1000});
  double z = std::exp(-2.0) + std::exp(-1.0) + 1;
  io.out(x.softmax(1), {std::exp(-2.0) / z, std::exp(-1.0) / z, 1 / z, 1.0 / 3, 1.0 / 3, 1.0 / 3});
  return io;
}

LUMINAL_OP_CASE(SoftmaxCase, f16_hand) {
  CaseIO io;
  std::vector<double> x = quantize({0.5, -1, 2, 0}, DType::F16);
  GraphTensor t = io.in(g.named_tensor("x", {4}, DType::F16), x);
  double z = 0;
  for (double v : x) z += std::exp(v);
  io.out(t.softmax(0), map1(x, [z](double v) { return std::exp(v) / z; }));
  return io;
}

LUMINAL_OP_CASE(LayerNormCase, last) {
  return fixture_unary(g, "layer_norm_last",
                       [](const GraphTensor& x) { return x.layer_norm(2, 1e-5); });
}
LUMINAL_OP_CASE(LayerNormCase, neg_axis) {
  return fixture_unary(g, "layer_norm_last", [](const GraphTensor& x) { return x.layer_norm(-1); });
}
LUMINAL_OP_CASE(LayerNormCase, middle) {
  return fixture_unary(g, "layer_norm_mid",
                       [](const GraphTensor& x) { return x.layer_norm(1, 1e-5); });
}

LUMINAL_OP_CASE(LayerNormCase, hand_eps) {
  // Constant rows: (x - mean) = 0 exactly, so the result is 0 (eps prevents 0/0); a row
  // {1, 3}: mean 2, var 1 -> +-1/sqrt(1 + eps).
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 2}), {5, 5, 1, 3});
  double s = 1 / std::sqrt(1 + 0.1);
  io.out(x.layer_norm(1, 0.1), {0, 0, -s, s});
  return io;
}

LUMINAL_OP_CASE(RmsNormCase, last) {
  return fixture_unary(g, "rms_norm", [](const GraphTensor& x) { return x.rms_norm(1, 1e-6); });
}

LUMINAL_OP_CASE(RmsNormCase, axis0_hand) {
  // x [2, 2] over axis 0: column {3, 4} has mean square 12.5.
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 2}), {3, 1, 4, -1});
  double a = std::sqrt(12.5 + 1e-6), b = std::sqrt(1 + 1e-6);
  io.out(x.rms_norm(0), {3 / a, 1 / b, 4 / a, -1 / b});
  return io;
}

}  // namespace luminal::ops_test
