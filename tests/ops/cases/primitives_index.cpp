// Primitive cases built from raw nodes: Gather, Scatter, SumReduce, MaxReduce.
// Expectations are written out by hand or computed by the plain loops in case_util.h.
#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

/// table [4, 3] = 0..11; gathers rows idx (shape idx_dims, dtype idt).
CaseIO gather_rows_case(Graph& g, DType idt, std::vector<Expr> idx_dims, std::vector<double> idx) {
  CaseIO io;
  GraphTensor table = io.in(g.named_tensor("table", {4, 3}), ramp(12));
  GraphTensor ti = io.in(g.named_tensor("idx", idx_dims, idt), idx);
  std::vector<Expr> shape = idx_dims;
  shape.push_back(3);
  std::vector<double> want;
  for (double r : idx) {
    for (int j = 0; j < 3; ++j) want.push_back(r * 3 + j);
  }
  io.out(prim_output(g, prim(g, OpKind::Gather, DType::F32, {table, ti}, shape)), want);
  return io;
}

/// dest [5, 2] = 0..9 with rows idx replaced by src [2, 2] = {100, 101, 102, 103}.
CaseIO scatter_rows_case(Graph& g, DType idt) {
  CaseIO io;
  GraphTensor dest = io.in(g.named_tensor("dest", {5, 2}), ramp(10));
  GraphTensor idx = io.in(g.named_tensor("idx", {2}, idt), {4, 1});
  GraphTensor src = io.in(g.named_tensor("src", {2, 2}), {100, 101, 102, 103});
  io.out(prim_output(g, prim(g, OpKind::Scatter, DType::F32, {dest, idx, src}, {5, 2})),
         {0, 1, 102, 103, 4, 5, 6, 7, 100, 101});
  return io;
}

/// Reduces axis of a [2, 3, 4] input with SumReduce or MaxReduce.
CaseIO reduce_case(Graph& g, OpKind k, DType dt, int axis, std::vector<double> x) {
  CaseIO io;
  std::vector<int64_t> dims{2, 3, 4};
  x = quantize(std::move(x), dt);
  GraphTensor t = io.in(g.named_tensor("x", {2, 3, 4}, dt), x);
  std::vector<Expr> shape;
  for (int d = 0; d < 3; ++d) {
    if (d != axis) shape.push_back(dims[d]);
  }
  GraphTensor r = prim(g, k, dt, {t}, shape, 0.0, axis);
  io.out(prim_output(g, r), reduce3(x, dims, axis, k == OpKind::MaxReduce));
  return io;
}

}  // namespace

LUMINAL_OP_CASE(GatherCase, i32_idx) { return gather_rows_case(g, DType::I32, {3}, {2, 0, 3}); }
LUMINAL_OP_CASE(GatherCase, i64_idx) { return gather_rows_case(g, DType::I64, {4}, {3, 3, 1, 0}); }
LUMINAL_OP_CASE(GatherCase, idx_2d) {
  return gather_rows_case(g, DType::I32, {2, 2}, {1, 1, 3, 0});
}

LUMINAL_OP_CASE(GatherCase, vector_table) {
  // A 1-D table gathers scalars: out[i] = data[idx[i]].
  CaseIO io;
  GraphTensor data = io.in(g.named_tensor("data", {5}, DType::I64), {10, 11, 12, 13, 14});
  GraphTensor idx = io.in(g.named_tensor("idx", {3}, DType::I64), {4, 4, 0});
  io.out(prim_output(g, prim(g, OpKind::Gather, DType::I64, {data, idx}, {3})), {14, 14, 10});
  return io;
}

LUMINAL_OP_CASE(GatherCase, table_3d) {
  CaseIO io;
  GraphTensor data = io.in(g.named_tensor("data", {3, 2, 2}), ramp(12));
  GraphTensor idx = io.in(g.named_tensor("idx", {2}, DType::I32), {2, 0});
  io.out(prim_output(g, prim(g, OpKind::Gather, DType::F32, {data, idx}, {2, 2, 2})),
         {8, 9, 10, 11, 0, 1, 2, 3});
  return io;
}

LUMINAL_OP_CASE(ScatterCase, i32_idx) { return scatter_rows_case(g, DType::I32); }
LUMINAL_OP_CASE(ScatterCase, i64_idx) { return scatter_rows_case(g, DType::I64); }

LUMINAL_OP_CASE(ScatterCase, vector) {
  CaseIO io;
  GraphTensor dest = io.in(g.named_tensor("dest", {6}, DType::I32), {0, 0, 0, 0, 0, 1});
  GraphTensor idx = io.in(g.named_tensor("idx", {3}, DType::I32), {0, 5, 2});
  GraphTensor src = io.in(g.named_tensor("src", {3}, DType::I32), {-1, -2, -3});
  io.out(prim_output(g, prim(g, OpKind::Scatter, DType::I32, {dest, idx, src}, {6})),
         {-1, 0, -3, 0, 0, -2});
  return io;
}

LUMINAL_OP_CASE(SumReduceCase, axis0) {
  return reduce_case(g, OpKind::SumReduce, DType::F32, 0, random_values(24, -2, 2, 1));
}
LUMINAL_OP_CASE(SumReduceCase, axis1) {
  return reduce_case(g, OpKind::SumReduce, DType::F32, 1, random_values(24, -2, 2, 2));
}
LUMINAL_OP_CASE(SumReduceCase, axis2) {
  return reduce_case(g, OpKind::SumReduce, DType::F32, 2, random_values(24, -2, 2, 3));
}
LUMINAL_OP_CASE(SumReduceCase, i32_axis1) {
  return reduce_case(g, OpKind::SumReduce, DType::I32, 1, ramp(24, -11, 1));
}
LUMINAL_OP_CASE(SumReduceCase, f16_axis2) {
  return reduce_case(g, OpKind::SumReduce, DType::F16, 2, random_values(24, -2, 2, 4));
}
LUMINAL_OP_CASE(MaxReduceCase, axis0) {
  return reduce_case(g, OpKind::MaxReduce, DType::F32, 0, random_values(24, -5, 5, 5));
}
LUMINAL_OP_CASE(MaxReduceCase, axis1) {
  return reduce_case(g, OpKind::MaxReduce, DType::F32, 1, random_values(24, -5, 5, 6));
}
LUMINAL_OP_CASE(MaxReduceCase, axis2_all_negative) {
  // All values negative: a max that starts from 0 instead of -inf shows up here.
  return reduce_case(g, OpKind::MaxReduce, DType::F32, 2, random_values(24, -9, -1, 7));
}
LUMINAL_OP_CASE(MaxReduceCase, i32_axis0) {
  return reduce_case(g, OpKind::MaxReduce, DType::I32, 0, ramp(24, -30, 2));
}

LUMINAL_OP_CASE(SumReduceCase, permuted_view) {
  // Reduces axis 1 of x^T: out[j] = sum_i x[i, j] for x [3, 2] read as [2, 3].
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {3, 2}), {1, 2, 3, 4, 5, 6});
  std::vector<int> order{1, 0};
  GraphTensor xt = with_view(x, x.view.permute(order));
  io.out(prim_output(g, prim(g, OpKind::SumReduce, DType::F32, {xt}, {2}, 0.0, 1)), {9, 12});
  return io;
}

}  // namespace luminal::ops_test
