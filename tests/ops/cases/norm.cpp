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

namespace luminal::ops_test {

namespace {

// log_softmax of row-major [rows, n] over the last axis, in double.
std::vector<double> log_softmax_rows(const std::vector<double>& x, size_t n) {
  std::vector<double> out;
  for (size_t r = 0; r < x.size() / n; ++r) {
    double m = -INFINITY, s = 0;
    for (size_t i = 0; i < n; ++i) m = std::max(m, x[r * n + i]);
    for (size_t i = 0; i < n; ++i) s += std::exp(x[r * n + i] - m);
    for (size_t i = 0; i < n; ++i) out.push_back(x[r * n + i] - m - std::log(s));
  }
  return out;
}

}  // namespace

LUMINAL_OP_CASE(LogSoftmaxCase, rows) {
  CaseIO io;
  std::vector<double> x = quantize(random_values(24, -5, 5), DType::F32);
  GraphTensor t = io.in(g.named_tensor("x", {4, 6}), x);
  io.out(t.log_softmax(-1), log_softmax_rows(x, 6));
  return io;
}

LUMINAL_OP_CASE(LogSoftmaxCase, axis0_transposed) {
  // log_softmax over axis 0 of x [6, 4] = rows of x^T.
  CaseIO io;
  std::vector<double> x = quantize(random_values(24, -3, 3, 7), DType::F32);
  GraphTensor t = io.in(g.named_tensor("x", {6, 4}), x);
  io.out(t.log_softmax(0).transpose(0, 1), log_softmax_rows(permute_ref(x, {6, 4}, {1, 0}), 6));
  return io;
}

LUMINAL_OP_CASE(LogSoftmaxCase, large_and_masked) {
  // exp(1000) overflows and log(softmax) of a tiny probability underflows: only the shifted form
  // gives -2000 exactly; -inf entries stay -inf and do not poison their row.
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 3}), {1000, -1000, 1000, 0, -INFINITY, 0});
  const double l2 = std::log(2.0);
  io.out(x.log_softmax(1), {-l2, -2000 - l2, -l2, -l2, -INFINITY, -l2});
  return io;
}

}  // namespace luminal::ops_test
