// matmul for 1-D to 5-D operands (numpy rules, broadcast batch dims, transposed views) against
// PyTorch fixtures, plus small hand-checked products.
#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

/// NAME.a @ NAME.b vs NAME.out.
CaseIO mm_fixture(Graph& g, const std::string& name) {
  CaseIO io;
  GraphTensor a = fixture_input(g, io, name + ".a");
  GraphTensor b = fixture_input(g, io, name + ".b");
  io.out(a.matmul(b), fixture(name + ".out").values);
  return io;
}

}  // namespace

LUMINAL_OP_CASE(MatmulCase, vec_vec) { return mm_fixture(g, "mm_1d_1d"); }
LUMINAL_OP_CASE(MatmulCase, vec_mat) { return mm_fixture(g, "mm_1d_2d"); }
LUMINAL_OP_CASE(MatmulCase, mat_vec) { return mm_fixture(g, "mm_2d_1d"); }
LUMINAL_OP_CASE(MatmulCase, mat_mat) { return mm_fixture(g, "mm_2d"); }
LUMINAL_OP_CASE(MatmulCase, batched3d) { return mm_fixture(g, "mm_3d"); }
LUMINAL_OP_CASE(MatmulCase, batched3d_by_2d) { return mm_fixture(g, "mm_3d_2d"); }
LUMINAL_OP_CASE(MatmulCase, batched4d_broadcast) { return mm_fixture(g, "mm_4d_bcast"); }

LUMINAL_OP_CASE(MatmulCase, transposed_rhs) {
  // bt [5, 4] is stored; the op reads bt^T [4, 5] through a view.
  CaseIO io;
  GraphTensor a = fixture_input(g, io, "mm_transposed.a");
  GraphTensor bt = fixture_input(g, io, "mm_transposed.bt");
  io.out(a.matmul(bt.transpose(0, 1)), fixture("mm_transposed.out").values);
  return io;
}

LUMINAL_OP_CASE(MatmulCase, batched3d_transposed) {
  CaseIO io;
  GraphTensor a = fixture_input(g, io, "mm_3d_transposed.a");
  GraphTensor bt = fixture_input(g, io, "mm_3d_transposed.bt");
  io.out(a.matmul(bt.transpose(1, 2)), fixture("mm_3d_transposed.out").values);
  return io;
}

LUMINAL_OP_CASE(MatmulCase, transposed_lhs_hand) {
  // at [2, 2] = [[1, 2], [3, 4]]; at^T @ b with b = [[1, 0], [1, 1]] = [[4, 3], [6, 4]].
  CaseIO io;
  GraphTensor at = io.in(g.named_tensor("at", {2, 2}), {1, 2, 3, 4});
  GraphTensor b = io.in(g.named_tensor("b", {2, 2}), {1, 0, 1, 1});
  io.out(at.transpose(0, 1).matmul(b), {4, 3, 6, 4});
  return io;
}

LUMINAL_OP_CASE(MatmulCase, i32_hand) {
  // [[1, 2, 3]] @ [[1], [-1], [2]] = [[5]].
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {1, 3}, DType::I32), {1, 2, 3});
  GraphTensor b = io.in(g.named_tensor("b", {3, 1}, DType::I32), {1, -1, 2});
  io.out(a.matmul(b), {5});
  return io;
}

LUMINAL_OP_CASE_TOL(MatmulCase, f16_hand, 1e-2, 1e-2) {
  // f16 operands, k = 16; the expectation is the exact product of the stored values.
  CaseIO io;
  std::vector<double> a = quantize(random_values(2 * 16, -1, 1, 31), DType::F16);
  std::vector<double> b = quantize(random_values(16 * 3, -1, 1, 32), DType::F16);
  GraphTensor ta = io.in(g.named_tensor("a", {2, 16}, DType::F16), a);
  GraphTensor tb = io.in(g.named_tensor("b", {16, 3}, DType::F16), b);
  std::vector<double> want(6, 0.0);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int k = 0; k < 16; ++k) want[i * 3 + j] += a[i * 16 + k] * b[k * 3 + j];
  io.out(ta.matmul(tb), want);
  return io;
}

}  // namespace luminal::ops_test

namespace luminal::ops_test {

LUMINAL_OP_CASE(MatmulCase, grouped_5d_broadcast) {
  // Grouped-query attention's shape: a [B=2, H=2, G=2, M=3, K=4] @ b [B, H, 1 -> G, K, N=5],
  // b's group dim a stride-0 expand (no copy). out[b, h, g] = a[b, h, g] @ b[b, h].
  CaseIO io;
  const std::vector<double> av = quantize(random_values(96, -1, 1, 11), DType::F32);
  const std::vector<double> bv = quantize(random_values(80, -1, 1, 12), DType::F32);
  GraphTensor a = io.in(g.named_tensor("a", {2, 2, 2, 3, 4}), av);
  GraphTensor b = io.in(g.named_tensor("b", {2, 2, 4, 5}), bv);
  std::vector<double> want;
  for (int bh = 0; bh < 4; ++bh)
    for (int gi = 0; gi < 2; ++gi)
      for (int m = 0; m < 3; ++m)
        for (int n = 0; n < 5; ++n) {
          double acc = 0;
          for (int k = 0; k < 4; ++k)
            acc += av[((bh * 2 + gi) * 3 + m) * 4 + k] * bv[(bh * 4 + k) * 5 + n];
          want.push_back(acc);
        }
  io.out(a.matmul(b.expand_dim(2, 2)), want);
  return io;
}

}  // namespace luminal::ops_test
