// Indexing API: gather (torch.index_select on rows) and scatter (torch.index_copy on rows),
// I32 and I64 indices, against PyTorch fixtures and by hand.
#include "ops/cases/case_util.h"

namespace luminal::ops_test {

LUMINAL_OP_CASE(GatherCase, api_fixture_i64) {
  CaseIO io;
  GraphTensor x = fixture_input(g, io, "gather.x");
  GraphTensor idx = fixture_input(g, io, "gather.idx");
  io.out(x.gather(idx), fixture("gather.out").values);
  return io;
}
LUMINAL_OP_CASE(GatherCase, api_fixture_i32) {
  CaseIO io;
  GraphTensor x = fixture_input(g, io, "gather.x");
  GraphTensor idx = fixture_input(g, io, "gather.idx", DType::I32);
  io.out(x.gather(idx), fixture("gather.out").values);
  return io;
}
LUMINAL_OP_CASE(GatherCase, api_idx_2d) {
  // table [3, 2] = 0..5, idx [[2, 0], [1, 2]] -> [2, 2, 2].
  CaseIO io;
  GraphTensor t = io.in(g.named_tensor("t", {3, 2}), ramp(6));
  GraphTensor idx = io.in(g.named_tensor("idx", {2, 2}, DType::I64), {2, 0, 1, 2});
  io.out(t.gather(idx), {4, 5, 0, 1, 2, 3, 4, 5});
  return io;
}
LUMINAL_OP_CASE(GatherCase, api_computed_idx) {
  // Indices produced in the graph: arange(3) * 2 selects rows 0, 2, 4.
  CaseIO io;
  GraphTensor t = io.in(g.named_tensor("t", {5, 2}, DType::I32), ramp(10, 100));
  io.out(t.gather(g.arange(3) * 2.0), {100, 101, 104, 105, 108, 109});
  return io;
}
LUMINAL_OP_CASE(ScatterCase, api_fixture_i64) {
  CaseIO io;
  GraphTensor dest = fixture_input(g, io, "scatter.dest");
  GraphTensor idx = fixture_input(g, io, "scatter.idx");
  GraphTensor src = fixture_input(g, io, "scatter.src");
  io.out(dest.scatter(idx, src), fixture("scatter.out").values);
  return io;
}
LUMINAL_OP_CASE(ScatterCase, api_fixture_i32) {
  CaseIO io;
  GraphTensor dest = fixture_input(g, io, "scatter.dest");
  GraphTensor idx = fixture_input(g, io, "scatter.idx", DType::I32);
  GraphTensor src = fixture_input(g, io, "scatter.src");
  io.out(dest.scatter(idx, src), fixture("scatter.out").values);
  return io;
}
LUMINAL_OP_CASE(ScatterCase, api_computed_src) {
  // src computed in the graph (2 * rows) and written over rows 0 and 2 of a zero-based dest.
  CaseIO io;
  GraphTensor dest = io.in(g.named_tensor("dest", {3, 2}), {1, 1, 1, 1, 1, 1});
  GraphTensor idx = io.in(g.named_tensor("idx", {2}, DType::I32), {2, 0});
  GraphTensor src = io.in(g.named_tensor("src", {2, 2}), {1, 2, 3, 4});
  io.out(dest.scatter(idx, src * 2.0), {6, 8, 1, 1, 2, 4});
  return io;
}

}  // namespace luminal::ops_test
