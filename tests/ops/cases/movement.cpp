// Movement API (views unless noted): permute, transpose, expand_dim, expand_to, split_dims,
// merge_dims (with and without a copy), reshape, slice, pad, concat_along, concat, contiguous.
// Expectations from plain index loops on ramps, and PyTorch fixtures for concat.
#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

/// Declares x [2, 3, 4] = 0..23.
GraphTensor ramp3(Graph& g, CaseIO& io) { return io.in(g.named_tensor("x", {2, 3, 4}), ramp(24)); }

}  // namespace

LUMINAL_OP_CASE(PermuteCase, order_201) {
  CaseIO io;
  GraphTensor x = ramp3(g, io);
  io.out(x.permute({2, 0, 1}), permute_ref(ramp(24), {2, 3, 4}, {2, 0, 1}));
  return io;
}
LUMINAL_OP_CASE(PermuteCase, then_add) {
  // A permuted operand in arithmetic: x^T + x^T.
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 3}), {1, 2, 3, 4, 5, 6});
  GraphTensor xt = x.permute({1, 0});
  io.out(xt + xt, {2, 8, 4, 10, 6, 12});
  return io;
}
LUMINAL_OP_CASE(TransposeCase, dims_0_2) {
  CaseIO io;
  GraphTensor x = ramp3(g, io);
  io.out(x.transpose(0, 2), permute_ref(ramp(24), {2, 3, 4}, {2, 1, 0}));
  return io;
}
LUMINAL_OP_CASE(TransposeCase, last_two) {
  CaseIO io;
  GraphTensor x = ramp3(g, io);
  io.out(x.transpose(1, 2), permute_ref(ramp(24), {2, 3, 4}, {0, 2, 1}));
  return io;
}
LUMINAL_OP_CASE(ExpandDimCase, front) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {3}), {1, 2, 3});
  io.out(x.expand_dim(0, 2), {1, 2, 3, 1, 2, 3});
  return io;
}
LUMINAL_OP_CASE(ExpandDimCase, last) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {3}), {1, 2, 3});
  io.out(x.expand_dim(1, 2), {1, 1, 2, 2, 3, 3});
  return io;
}
LUMINAL_OP_CASE(ExpandDimCase, middle_then_sum) {
  // Broadcast [2, 3] -> [2, 4, 3] then reduce the new axis: 4x the input.
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 3}), {1, 2, 3, 4, 5, 6});
  io.out(x.expand_dim(1, 4).sum(1), {4, 8, 12, 16, 20, 24});
  return io;
}
LUMINAL_OP_CASE(ExpandToCase, leading_dims) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2}), {5, 6});
  io.out(x.expand_to({2, 3, 2}), {5, 6, 5, 6, 5, 6, 5, 6, 5, 6, 5, 6});
  return io;
}
LUMINAL_OP_CASE(ExpandToCase, stretch_size1) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 1}), {5, 6});
  io.out(x.expand_to({2, 3}), {5, 5, 5, 6, 6, 6});
  return io;
}
LUMINAL_OP_CASE(SplitDimsCase, axis2) {
  // [2, 3, 4] -> [2, 3, 2, 2]: the same row-major data.
  CaseIO io;
  GraphTensor x = ramp3(g, io);
  GraphTensor s = x.split_dims(2, 2);
  io.out(s, ramp(24));
  io.out(s.permute({0, 1, 3, 2}), permute_ref(ramp(24), {2, 3, 2, 2}, {0, 1, 3, 2}));
  return io;
}
LUMINAL_OP_CASE(SplitDimsCase, axis0_of_permuted) {
  // x^T [4, 3] split on axis 0 into [2, 2, 3].
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {3, 4}), ramp(12));
  io.out(x.transpose(0, 1).split_dims(0, 2), permute_ref(ramp(12), {3, 4}, {1, 0}));
  return io;
}
LUMINAL_OP_CASE(MergeDimsCase, contiguous) {
  CaseIO io;
  GraphTensor x = ramp3(g, io);
  io.out(x.merge_dims(1), ramp(24));
  io.out(x.merge_dims(0), ramp(24));
  return io;
}
LUMINAL_OP_CASE(MergeDimsCase, needs_copy) {
  // permute {1, 0, 2} gives [3, 2, 4] with strides (4, 12, 1): dims 0 and 1 cannot merge as a view.
  CaseIO io;
  GraphTensor x = ramp3(g, io);
  GraphTensor m = x.permute({1, 0, 2}).merge_dims(0);
  io.out(m, permute_ref(ramp(24), {2, 3, 4}, {1, 0, 2}));
  io.out(m.sum(1), reduce3(permute_ref(ramp(24), {2, 3, 4}, {1, 0, 2}), {6, 1, 4}, 2, false));
  return io;
}
LUMINAL_OP_CASE(ReshapeCase, contiguous) {
  CaseIO io;
  GraphTensor x = ramp3(g, io);
  GraphTensor r = x.reshape({4, 6});
  io.out(r, ramp(24));
  io.out(r.sum(1), {15, 51, 87, 123});
  return io;
}
LUMINAL_OP_CASE(ReshapeCase, after_transpose) {
  // Not contiguous: reshape materializes x^T [3, 2] first, then reads it as [6].
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 3}), {1, 2, 3, 4, 5, 6});
  io.out(x.transpose(0, 1).reshape({6}), {1, 4, 2, 5, 3, 6});
  return io;
}
LUMINAL_OP_CASE(SliceCase, axis1) {
  CaseIO io;
  GraphTensor x = ramp3(g, io);
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 1; j < 3; ++j)
      for (int k = 0; k < 4; ++k) want.push_back(i * 12 + j * 4 + k);
  io.out(x.slice(1, 1, 3), want);
  return io;
}
LUMINAL_OP_CASE(SliceCase, twice_and_add) {
  // x[1:3] + x[0:2] on a vector.
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {4}), {1, 10, 100, 1000});
  io.out(x.slice(0, 1, 3) + x.slice(0, 0, 2), {11, 110});
  return io;
}
LUMINAL_OP_CASE(PadCase, axis0) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 2}), {1, 2, 3, 4});
  io.out(x.pad(0, 1, 0), {0, 0, 1, 2, 3, 4});
  return io;
}
LUMINAL_OP_CASE(PadCase, axis1_both_sides) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 2}, DType::I32), {1, 2, 3, 4});
  io.out(x.pad(1, 2, 1), {0, 0, 1, 2, 0, 0, 0, 3, 4, 0});
  return io;
}
LUMINAL_OP_CASE(PadCase, slice_then_pad) {
  // The padding of a sliced view is zeros, not the neighbouring data.
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {4}), {1, 2, 3, 4});
  io.out(x.slice(0, 1, 3).pad(0, 1, 1), {0, 2, 3, 0});
  return io;
}
LUMINAL_OP_CASE(ConcatAlongCase, axis1_fixture) {
  CaseIO io;
  GraphTensor a = fixture_input(g, io, "concat_axis1.a");
  GraphTensor b = fixture_input(g, io, "concat_axis1.b");
  io.out(a.concat_along(b, 1), fixture("concat_axis1.out").values);
  return io;
}
LUMINAL_OP_CASE(ConcatAlongCase, axis0_i32) {
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {1, 2}, DType::I32), {1, -2});
  GraphTensor b = io.in(g.named_tensor("b", {2, 2}, DType::I32), {3, 4, -5, 6});
  io.out(a.concat_along(b, 0), {1, -2, 3, 4, -5, 6});
  return io;
}
LUMINAL_OP_CASE(ConcatCase, three_parts_fixture) {
  CaseIO io;
  GraphTensor a = fixture_input(g, io, "concat3_axis0.a");
  GraphTensor b = fixture_input(g, io, "concat3_axis0.b");
  GraphTensor c = fixture_input(g, io, "concat3_axis0.c");
  io.out(concat({a, b, c}, 0), fixture("concat3_axis0.out").values);
  return io;
}
LUMINAL_OP_CASE(ConcatCase, last_axis_with_views) {
  // concat of a transposed view and a broadcast: [[1, 3, 9], [2, 4, 9]].
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {2, 2}), {1, 2, 3, 4});
  GraphTensor s = io.in(g.named_tensor("s", {2}), {9, 9});
  io.out(concat({a.transpose(0, 1), s.expand_dim(1, 1)}, 1), {1, 3, 9, 2, 4, 9});
  return io;
}
LUMINAL_OP_CASE(ContiguousCase, transposed) {
  CaseIO io;
  GraphTensor x = ramp3(g, io);
  io.out(x.permute({1, 2, 0}).contiguous(), permute_ref(ramp(24), {2, 3, 4}, {1, 2, 0}));
  return io;
}
LUMINAL_OP_CASE(ContiguousCase, already_contiguous) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {3}, DType::I64), {4, 5, 6});
  io.out(x.contiguous() + x, {8, 10, 12});
  return io;
}

}  // namespace luminal::ops_test
