// nn building blocks: Linear (PyTorch (out, in) layout, with/without bias), EmbeddingBag
// (sum/mean, bag 1 and 3) against PyTorch fixtures; gather_rows / scatter_rows by hand.
#include "luminal/nn.h"
#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

/// nn::Linear(4 -> 5) on fixture NAME's x / weight / bias.
CaseIO linear_fixture(Graph& g, const std::string& name, bool with_bias) {
  CaseIO io;
  GraphTensor x = fixture_input(g, io, name + ".x");
  nn::Linear lin(g, name, 4, 5, with_bias);
  io.in(lin.weight, fixture(name + ".weight").values);
  if (with_bias) io.in(*lin.bias, fixture(name + ".bias").values);
  io.out(lin(x), fixture(name + ".out").values);
  return io;
}

/// nn::EmbeddingBag(10, 4) on fixture embedding_bag_<mode>_bag<bag>.
CaseIO bag_fixture(Graph& g, nn::BagMode mode, int bag, DType idx_dtype) {
  CaseIO io;
  std::string name = std::string("embedding_bag_") + (mode == nn::BagMode::Sum ? "sum" : "mean") +
                     "_bag" + std::to_string(bag);
  nn::EmbeddingBag eb(g, name + ".weight", 10, 4, mode);
  io.in(eb.weight, fixture(name + ".weight").values);
  GraphTensor idx = fixture_input(g, io, name + ".indices", idx_dtype);
  io.out(eb(idx, bag), fixture(name + ".out").values);
  return io;
}

}  // namespace

LUMINAL_OP_CASE(LinearCase, bias) { return linear_fixture(g, "linear_bias", true); }
LUMINAL_OP_CASE(LinearCase, no_bias) { return linear_fixture(g, "linear_nobias", false); }
LUMINAL_OP_CASE(LinearCase, input_3d) { return linear_fixture(g, "linear_3d", true); }

LUMINAL_OP_CASE(LinearCase, weight_names) {
  // weight [out, in] named prefix.weight: y = x W^T + b by hand.
  CaseIO io;
  nn::Linear lin(g, "fc", 2, 3, true);
  EXPECT_EQ(lin.weight.node().name, "fc.weight");
  EXPECT_EQ(lin.bias->node().name, "fc.bias");
  GraphTensor x = io.in(g.named_tensor("x", {1, 2}), {1, 2});
  io.in(lin.weight, {1, 0, 0, 1, 1, 1});
  io.in(*lin.bias, {0.5, -0.5, 0});
  io.out(lin(x), {1.5, 1.5, 3});
  return io;
}

LUMINAL_OP_CASE(EmbeddingBagCase, sum_bag1) {
  return bag_fixture(g, nn::BagMode::Sum, 1, DType::I64);
}
LUMINAL_OP_CASE(EmbeddingBagCase, sum_bag3) {
  return bag_fixture(g, nn::BagMode::Sum, 3, DType::I64);
}
LUMINAL_OP_CASE(EmbeddingBagCase, mean_bag1) {
  return bag_fixture(g, nn::BagMode::Mean, 1, DType::I64);
}
LUMINAL_OP_CASE(EmbeddingBagCase, mean_bag3) {
  return bag_fixture(g, nn::BagMode::Mean, 3, DType::I64);
}
LUMINAL_OP_CASE(EmbeddingBagCase, sum_bag3_i32_idx) {
  return bag_fixture(g, nn::BagMode::Sum, 3, DType::I32);
}
LUMINAL_OP_CASE(EmbeddingBagCase, mean_bag3_i32_idx) {
  return bag_fixture(g, nn::BagMode::Mean, 3, DType::I32);
}

LUMINAL_OP_CASE(GatherRowsCase, i32) {
  CaseIO io;
  GraphTensor t = io.in(g.named_tensor("t", {4, 2}), ramp(8));
  GraphTensor idx = io.in(g.named_tensor("idx", {3}, DType::I32), {3, 3, 0});
  io.out(nn::gather_rows(t, idx), {6, 7, 6, 7, 0, 1});
  return io;
}
LUMINAL_OP_CASE(GatherRowsCase, i64_3d_table) {
  CaseIO io;
  GraphTensor t = io.in(g.named_tensor("t", {3, 2, 2}, DType::BF16), ramp(12));
  GraphTensor idx = io.in(g.named_tensor("idx", {1}, DType::I64), {1});
  io.out(nn::gather_rows(t, idx), {4, 5, 6, 7});
  return io;
}
LUMINAL_OP_CASE(ScatterRowsCase, kv_write) {
  // A KV-cache write: cache [4, 2, 2], new rows for positions 3 and 1.
  CaseIO io;
  GraphTensor cache = io.in(g.named_tensor("cache", {4, 2, 2}), ramp(16));
  GraphTensor pos = io.in(g.named_tensor("pos", {2}, DType::I64), {3, 1});
  GraphTensor kv = io.in(g.named_tensor("kv", {2, 2, 2}), ramp(8, -1, -1));
  io.out(nn::scatter_rows(cache, pos, kv),
         {0, 1, 2, 3, -5, -6, -7, -8, 8, 9, 10, 11, -1, -2, -3, -4});
  return io;
}

}  // namespace luminal::ops_test
