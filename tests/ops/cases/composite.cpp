// Patterns that combine ops: chained views into matmul, dynamic slices and concats, indices that
// are views, long reductions, reduced-precision norms, a small MLP and the DLRM dot interaction.
// Expectations from plain double-precision loops over the exact stored inputs.
#include <cmath>

#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

/// C[m, n] = sum_k A(m, k) B(k, n) for accessor functions.
template <class A, class B>
std::vector<double> mm_ref(int64_t m, int64_t k, int64_t n, A a, B b) {
  std::vector<double> c;
  for (int64_t i = 0; i < m; ++i) {
    for (int64_t j = 0; j < n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < k; ++p) s += a(i, p) * b(p, j);
      c.push_back(s);
    }
  }
  return c;
}

const Expr kBatch = Expr::sym("batch");

}  // namespace

LUMINAL_OP_CASE(MatmulCase, both_transposed) {
  // (at^T) @ (bt^T) with at [4, 3], bt [2, 4] -> [3, 2].
  CaseIO io;
  std::vector<double> at = quantize(random_values(12, -1, 1, 41), DType::F32);
  std::vector<double> bt = quantize(random_values(8, -1, 1, 42), DType::F32);
  GraphTensor ta = io.in(g.named_tensor("at", {4, 3}), at);
  GraphTensor tb = io.in(g.named_tensor("bt", {2, 4}), bt);
  io.out(ta.transpose(0, 1).matmul(tb.transpose(0, 1)),
         mm_ref(
             3, 4, 2, [&](int64_t i, int64_t p) { return at[p * 3 + i]; },
             [&](int64_t p, int64_t j) { return bt[j * 4 + p]; }));
  return io;
}

LUMINAL_OP_CASE(MatmulCase, sliced_operands) {
  // a[:, 1:4] @ b[0:3, :] with a [2, 5], b [4, 3].
  CaseIO io;
  std::vector<double> a = ramp(10, -4, 1), b = ramp(12, 1, 0.5);
  GraphTensor ta = io.in(g.named_tensor("a", {2, 5}), a);
  GraphTensor tb = io.in(g.named_tensor("b", {4, 3}), b);
  io.out(ta.slice(1, 1, 4).matmul(tb.slice(0, 0, 3)),
         mm_ref(
             2, 3, 3, [&](int64_t i, int64_t p) { return a[i * 5 + p + 1]; },
             [&](int64_t p, int64_t j) { return b[p * 3 + j]; }));
  return io;
}

LUMINAL_OP_CASE(MatmulCase, broadcast_vector_rhs_view) {
  // A [2, 3, 4] @ v where v is an expanded view [4] -> [2, 3].
  CaseIO io;
  std::vector<double> a = ramp(24, 0, 0.25);
  GraphTensor ta = io.in(g.named_tensor("a", {2, 3, 4}), a);
  GraphTensor s = io.in(g.named_tensor("s", {1}), {2});
  std::vector<double> want;
  for (int r = 0; r < 6; ++r)
    want.push_back(2 * (a[r * 4] + a[r * 4 + 1] + a[r * 4 + 2] + a[r * 4 + 3]));
  io.out(ta.matmul(s.expand_to({4})), want);
  return io;
}

LUMINAL_OP_CASE(InteractionCase, dot_bmm) {
  // DLRM dot interaction: Z[b] = X[b] X[b]^T for X [2, 3, 4].
  CaseIO io;
  std::vector<double> x = quantize(random_values(24, -1, 1, 43), DType::F32);
  GraphTensor tx = io.in(g.named_tensor("x", {2, 3, 4}), x);
  std::vector<double> want;
  for (int b = 0; b < 2; ++b) {
    std::vector<double> z = mm_ref(
        3, 4, 3, [&](int64_t i, int64_t p) { return x[b * 12 + i * 4 + p]; },
        [&](int64_t p, int64_t j) { return x[b * 12 + j * 4 + p]; });
    want.insert(want.end(), z.begin(), z.end());
  }
  io.out(tx.matmul(tx.transpose(1, 2)), want);
  return io;
}

LUMINAL_OP_CASE(MlpCase, relu_then_sigmoid) {
  // sigmoid(relu(x W1) W2) with x [2, 3], W1 [3, 4], W2 [4, 1] (no bias).
  CaseIO io;
  std::vector<double> x = quantize(random_values(6, -1, 1, 44), DType::F32);
  std::vector<double> w1 = quantize(random_values(12, -1, 1, 45), DType::F32);
  std::vector<double> w2 = quantize(random_values(4, -1, 1, 46), DType::F32);
  GraphTensor tx = io.in(g.named_tensor("x", {2, 3}), x);
  GraphTensor t1 = io.in(g.named_tensor("w1", {3, 4}), w1);
  GraphTensor t2 = io.in(g.named_tensor("w2", {4, 1}), w2);
  std::vector<double> h = mm_ref(
      2, 3, 4, [&](int64_t i, int64_t p) { return x[i * 3 + p]; },
      [&](int64_t p, int64_t j) { return w1[p * 4 + j]; });
  for (double& v : h) v = std::max(v, 0.0);
  std::vector<double> y = mm_ref(
      2, 4, 1, [&](int64_t i, int64_t p) { return h[i * 4 + p]; },
      [&](int64_t p, int64_t) { return w2[p]; });
  for (double& v : y) v = 1 / (1 + std::exp(-v));
  io.out(tx.matmul(t1).relu().matmul(t2).sigmoid(), y);
  return io;
}

LUMINAL_OP_CASE(SliceCase, dynamic_end_then_pad) {
  // x [batch, 2]: drop the first row, pad one zero row at the end -> [batch, 2].
  CaseIO io;
  io.dyn = {{"batch", 4}};
  GraphTensor x = io.in(g.named_tensor("x", {kBatch, 2}), ramp(8, 1));
  io.out(x.slice(0, 1, kBatch).pad(0, 0, 1), {3, 4, 5, 6, 7, 8, 0, 0});
  return io;
}

LUMINAL_OP_CASE(ConcatAlongCase, dynamic_rows) {
  CaseIO io;
  io.dyn = {{"batch", 3}};
  GraphTensor a = io.in(g.named_tensor("a", {kBatch, 2}), ramp(6));
  GraphTensor b = io.in(g.named_tensor("b", {kBatch, 1}), {-1, -2, -3});
  io.out(a.concat_along(b, 1), {0, 1, -1, 2, 3, -2, 4, 5, -3});
  return io;
}

LUMINAL_OP_CASE(GatherCase, sliced_idx) {
  CaseIO io;
  GraphTensor t = io.in(g.named_tensor("t", {3, 2}), ramp(6));
  GraphTensor idx = io.in(g.named_tensor("idx", {4}, DType::I32), {0, 2, 1, 0});
  io.out(t.gather(idx.slice(0, 1, 3)), {4, 5, 2, 3});
  return io;
}

LUMINAL_OP_CASE(GatherCase, transposed_table) {
  // Rows of a transposed table are columns of the stored one.
  CaseIO io;
  GraphTensor t = io.in(g.named_tensor("t", {2, 3}), {1, 2, 3, 4, 5, 6});
  GraphTensor idx = io.in(g.named_tensor("idx", {2}, DType::I64), {2, 0});
  io.out(t.transpose(0, 1).gather(idx), {3, 6, 1, 4});
  return io;
}

LUMINAL_OP_CASE(SumCase, long_f32) {
  // 4096 values: a naive f32 running sum drifts visibly; the check is 1e-5 relative.
  CaseIO io;
  std::vector<double> x = quantize(random_values(4096, 0, 1, 47), DType::F32);
  GraphTensor t = io.in(g.named_tensor("x", {4096}), x);
  double s = 0;
  for (double v : x) s += v;
  io.out(t.sum(0), {s});
  return io;
}

LUMINAL_OP_CASE(SoftmaxCase, bf16_rows) {
  CaseIO io;
  std::vector<double> x = quantize(random_values(8, -3, 3, 48), DType::BF16);
  GraphTensor t = io.in(g.named_tensor("x", {2, 4}, DType::BF16), x);
  std::vector<double> want;
  for (int r = 0; r < 2; ++r) {
    double z = 0;
    for (int k = 0; k < 4; ++k) z += std::exp(x[r * 4 + k]);
    for (int k = 0; k < 4; ++k) want.push_back(std::exp(x[r * 4 + k]) / z);
  }
  io.out(t.softmax(1), want);
  return io;
}

LUMINAL_OP_CASE_TOL(LayerNormCase, f16_rows, 1e-2, 1e-2) {
  // f16 statistics lose a few bits; 1e-2 is what PyTorch's f16 layer_norm also meets here.
  CaseIO io;
  std::vector<double> x = quantize(random_values(8, -2, 2, 49), DType::F16);
  GraphTensor t = io.in(g.named_tensor("x", {2, 4}, DType::F16), x);
  std::vector<double> want;
  for (int r = 0; r < 2; ++r) {
    double m = 0, v = 0;
    for (int k = 0; k < 4; ++k) m += x[r * 4 + k] / 4;
    for (int k = 0; k < 4; ++k) v += (x[r * 4 + k] - m) * (x[r * 4 + k] - m) / 4;
    for (int k = 0; k < 4; ++k) want.push_back((x[r * 4 + k] - m) / std::sqrt(v + 1e-5));
  }
  io.out(t.layer_norm(1), want);
  return io;
}

LUMINAL_OP_CASE(ReuseCase, one_node_many_consumers) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {3}), {0, 1, -1});
  GraphTensor e = x.exp();
  std::vector<double> ev = map1({0, 1, -1}, [](double v) { return std::exp(v); });
  io.out(e + e * e, map1(ev, [](double v) { return v + v * v; }));
  io.out(e.sum(0), {ev[0] + ev[1] + ev[2]});
  io.out(e, ev);
  return io;
}

LUMINAL_OP_CASE(ModCase, broadcast_i64) {
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {2, 2}, DType::I64), {-9, 9, 10, -10});
  GraphTensor b = io.in(g.named_tensor("b", {2}, DType::I64), {4, -4});
  io.out(a % b, {-1, 1, 2, -2});
  return io;
}

}  // namespace luminal::ops_test
