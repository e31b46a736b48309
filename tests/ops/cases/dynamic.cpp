// Dynamic dimensions: graphs over the symbol "batch", executed with a DynMap. Hand expectations.
#include <cmath>

#include "luminal/nn.h"
#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

const Expr kBatch = Expr::sym("batch");

}  // namespace

LUMINAL_OP_CASE(DynamicCase, elementwise_batch) {
  CaseIO io;
  io.dyn = {{"batch", 4}};
  GraphTensor x = io.in(g.named_tensor("x", {kBatch, 3}), ramp(12));
  GraphTensor b = io.in(g.named_tensor("b", {3}), {1, 2, 3});
  std::vector<double> want;
  for (int i = 0; i < 12; ++i) want.push_back((i + (i % 3 + 1)) * 2);
  io.out((x + b) * 2.0, want);
  return io;
}

LUMINAL_OP_CASE(DynamicCase, sum_over_batch) {
  CaseIO io;
  io.dyn = {{"batch", 5}};
  GraphTensor x = io.in(g.named_tensor("x", {kBatch, 2}), ramp(10));
  io.out(x.sum(0), {0 + 2 + 4 + 6 + 8, 1 + 3 + 5 + 7 + 9});
  io.out(x.mean(0), {4, 5});
  return io;
}

LUMINAL_OP_CASE(DynamicCase, softmax_rows) {
  CaseIO io;
  io.dyn = {{"batch", 2}};
  GraphTensor x = io.in(g.named_tensor("x", {kBatch, 2}), {0, 0, 1, 3});
  double e = std::exp(2.0);
  io.out(x.softmax(1), {0.5, 0.5, 1 / (1 + e), e / (1 + e)});
  return io;
}

LUMINAL_OP_CASE(DynamicCase, linear_batch) {
  // y = x W^T + b with x = ramp [batch, 3], W = ramp [2, 3], b = {1, -1}.
  CaseIO io;
  io.dyn = {{"batch", 3}};
  nn::Linear lin(g, "fc", 3, 2, true);
  GraphTensor x = io.in(g.named_tensor("x", {kBatch, 3}), ramp(9));
  io.in(lin.weight, ramp(6));
  io.in(*lin.bias, {1, -1});
  std::vector<double> want;
  for (int r = 0; r < 3; ++r) {
    for (int o = 0; o < 2; ++o) {
      double s = o == 0 ? 1 : -1;
      for (int k = 0; k < 3; ++k) s += (r * 3 + k) * (o * 3 + k);
      want.push_back(s);
    }
  }
  io.out(lin(x), want);
  return io;
}

LUMINAL_OP_CASE(DynamicCase, embedding_bag_batch) {
  // batch 3, bag 2, table [4, 2] = 0..7; sums of row pairs.
  CaseIO io;
  io.dyn = {{"batch", 3}};
  nn::EmbeddingBag eb(g, "emb", 4, 2, nn::BagMode::Sum);
  io.in(eb.weight, ramp(8));
  GraphTensor idx = io.in(g.named_tensor("idx", {kBatch * 2}, DType::I32), {0, 1, 3, 3, 2, 0});
  io.out(eb(idx, 2), {2, 4, 12, 14, 4, 6});
  return io;
}

LUMINAL_OP_CASE(DynamicCase, two_values_one_graph) {
  // The same shape expression at another batch value: arange(batch) summed = batch (batch - 1) / 2.
  CaseIO io;
  io.dyn = {{"batch", 7}};
  io.out(g.arange(kBatch, DType::I64).sum(0), {21});
  return io;
}

}  // namespace luminal::ops_test
