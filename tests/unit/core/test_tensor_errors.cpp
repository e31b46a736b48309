// GraphTensor API misuse: every bad argument throws a tagged exception naming what is wrong.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "luminal/custom_op.h"
#include "luminal/nn.h"
#include "luminal/tensor.h"
#include "unit/core/core_test_util.h"

namespace luminal {
namespace {

class TensorErrors : public ::testing::Test {
 protected:
  Graph g;
  GraphTensor f23 = g.named_tensor("f23", {2, 3});
  GraphTensor f43 = g.named_tensor("f43", {4, 3});
  GraphTensor i23 = g.named_tensor("i23", {2, 3}, DType::I32);
};

TEST_F(TensorErrors, MixedDtypes) {
  expect_error([&] { f23 + i23; }, "[add] dtype mismatch: f32 vs i32");
  expect_error([&] { return i23 * f23; }, "[mul] dtype mismatch: i32 vs f32");
  expect_error([&] { f23 - i23; }, "[sub] dtype mismatch: f32 vs i32");
  expect_error([&] { f23 / i23; }, "[div] dtype mismatch");
  expect_error([&] { f23 % i23; }, "[mod] dtype mismatch");
  expect_error([&] { f23.lt(i23); }, "[less_than] dtype mismatch");
  expect_error([&] { f23.maximum(i23); }, "[maximum] dtype mismatch");
  expect_error([&] { f23.matmul(i23.transpose(0, 1)); }, "[matmul] dtype mismatch");
  expect_error([&] { f23.concat_along(i23, 0); }, "[concat] dtype mismatch");
  expect_error([&] { where(f23.lt(f23), f23, i23); }, "[where] dtype mismatch: f32 vs i32");
  expect_error([&] { where(i23, f23, f23); }, "[where] condition must be bool, got i32");
  expect_error([&] { where(f23.lt(f23), f23, f43); }, "[where] shape mismatch");
}

TEST_F(TensorErrors, ShapeMismatch) {
  expect_error([&] { f23 + f43; }, "[add] shape mismatch: [2, 3] vs [4, 3]");
  expect_error([&] { f23.eq(f43); }, "[eq] shape mismatch");
  expect_error([&] { f23.expand_to({4, 3}); }, "[expand_to] cannot broadcast [2, 3] to [4, 3]");
  expect_error([&] { f23.concat_along(f43, 1); }, "[concat] shapes [2, 3] and [4, 3] differ");
  GraphTensor s = g.named_tensor("s", {Expr::sym("a"), 3});
  expect_error([&] { s + f23; }, "[add] shape mismatch: [a, 3] vs [2, 3]");
}

TEST_F(TensorErrors, BadAxes) {
  expect_error([&] { f23.sum(3); }, "[sum] axis 3 out of range for rank 2");
  expect_error([&] { f23.max(-3); }, "[max] axis -3 out of range for rank 2");
  expect_error([&] { f23.mean(2); }, "[mean] axis 2 out of range");
  expect_error([&] { f23.softmax(5); }, "[softmax] axis 5 out of range");
  expect_error([&] { f23.transpose(0, 2); }, "[transpose] axis 2 out of range");
  expect_error([&] { f23.permute({0, 0}); }, "[permute]");
  expect_error([&] { f23.permute({0}); }, "[permute]");
  expect_error([&] { f23.expand_dim(4, 2); }, "[expand_dim]");
  expect_error([&] { f23.merge_dims(1); }, "[merge_dims]");
  expect_error([&] { f23.merge_dims(-1); }, "[merge_dims]");
  expect_error([&] { f23.expand_dim(0, -2); }, "[expand_dim]");
  expect_error([&] { f23.split_dims(1, 2); }, "[split_dims] dim 1 of [2, 3] is not divisible by 2");
  expect_error([&] { f23.slice(1, 2, 5); }, "[slice]");
  expect_error([&] { f23.slice(0, 2, 1); }, "[slice]");
  expect_error([&] { f23.pad(0, -1, 0); }, "[pad]");
  expect_error([&] { f23.reshape({4, 2}); }, "[reshape] cannot reshape [2, 3] (6 elements)");
  expect_error([&] { concat({}, 0); }, "[concat] no tensors");
}

TEST_F(TensorErrors, Matmul) {
  expect_error([&] { f23.matmul(f43); }, "[matmul] inner dims 3 vs 4");
  GraphTensor v4 = g.named_tensor("v4", {4});
  expect_error([&] { f23.matmul(v4); }, "[matmul] inner dims 3 vs 4");
  GraphTensor b5 = g.named_tensor("b5", {5, 3, 2});
  GraphTensor b6 = g.named_tensor("b6", {6, 2, 3});
  expect_error([&] { b6.matmul(b5); }, "[matmul] batch dims");
  GraphTensor r6 = g.named_tensor("r6", {1, 1, 1, 1, 2, 3});
  expect_error([&] { r6.matmul(f43.transpose(0, 1)); }, "[matmul] operands must be 1-D to 5-D");
  GraphTensor c = g.constant(1.0);
  expect_error([&] { c.matmul(f23); }, "[matmul] operands must be 1-D to 5-D");
}

TEST_F(TensorErrors, IndexingDtypesAndShapes) {
  GraphTensor fidx = g.named_tensor("fidx", {3});
  expect_error([&] { f43.gather(fidx); }, "[gather] indices must be i32 or i64, got f32");
  GraphTensor idx = g.named_tensor("idx", {2}, DType::I64);
  expect_error([&] { f43.scatter(fidx, f23); }, "[scatter] indices must be i32 or i64, got f32");
  expect_error([&] { f43.scatter(idx, i23); }, "[scatter] dtype mismatch: f32 vs i32");
  GraphTensor src = g.named_tensor("src", {3, 3});
  expect_error([&] { f43.scatter(idx, src); }, "[scatter] source [3, 3]");
  expect_error([&] { f43.scatter(i23, f23); }, "[scatter] indices must be 1-D");
  nn::EmbeddingBag emb(g, "emb", 10, 4);
  expect_error([&] { emb(i23, 3); }, "[embedding_bag] indices must be 1-D");
  expect_error([&] { emb(fidx, 3); }, "[gather] indices must be i32 or i64");
}

TEST_F(TensorErrors, FloatOnlyMath) {
  expect_error([&] { i23.exp(); }, "[exp] requires a float dtype, got i32");
  expect_error([&] { i23.sqrt(); }, "[sqrt] requires a float dtype, got i32");
  expect_error([&] { i23.sigmoid(); }, "[sigmoid] requires a float dtype");
  expect_error([&] { i23.softmax(0); }, "[softmax] requires a float dtype");
  expect_error([&] { i23.log_softmax(0); }, "[log_softmax] requires a float dtype");
  expect_error([&] { f23.log_softmax(2); }, "[log_softmax] axis 2 out of range");
  expect_error([&] { i23.erf(); }, "[erf] requires a float dtype, got i32");
  expect_error([&] { i23.erfc(); }, "[erfc] requires a float dtype, got i32");
  expect_error([&] { i23.gelu_erf(); }, "[gelu_erf] requires a float dtype, got i32");
  expect_error([&] { i23.mean(0); }, "[mean] requires a float dtype");
  expect_error([&] { i23 / i23; }, "[div] integer division is not supported; use float");
  expect_error([&] { i23 / 2.0; }, "[div] integer division is not supported");
}

// A broken custom op: its decomposition returns a tensor of another graph.
struct Escapes : CustomOp {
  Graph* elsewhere;
  explicit Escapes(Graph* g) : elsewhere(g) {}
  std::string name() const override { return "escapes"; }
  GraphTensor decompose(Graph&, const std::vector<GraphTensor>&) const override {
    return elsewhere->constant(1.0);
  }
};

TEST_F(TensorErrors, CustomOp) {
  Graph other;
  expect_error([&] { custom_op(std::make_shared<Escapes>(&other), {f23}); },
               "[custom_op] escapes: decompose must return a tensor of the graph it was given");
  GraphTensor o = other.named_tensor("o", {2});
  expect_error(
      [&] {
        custom_op(std::make_shared<Escapes>(&other), {f23, o});
      },
      "[custom_op] operands belong to different graphs");
  expect_error([&] { custom_op(std::make_shared<Escapes>(&other), {}); },
               "[custom_op] escapes needs at least one input");
}

TEST_F(TensorErrors, GraphMisuse) {
  EXPECT_NO_THROW(f23.persist());  // an Input: allowed
  expect_error([&] { (f23 + f23).persist(); }, "[persist] only Input nodes");
  GraphTensor detached;
  expect_error([&] { detached.exp2(); }, "not attached to a graph");
  expect_error([&] { detached + f23; }, "[add] tensor is not attached to a graph");
  Graph other;
  GraphTensor o = other.named_tensor("o", {2, 3});
  expect_error([&] { f23 + o; }, "[add] operands belong to different graphs");
  expect_error([&] { custom_op(nullptr, {f23}); }, "[custom_op] op is null");
  expect_error([&] { GraphTensor(&g, 999); }, "[tensor] node 999 does not exist");
  expect_error([&] { g.named_tensor("neg", {2, -1}); }, "[named_tensor] 'neg' has a negative dim");
}

}  // namespace
}  // namespace luminal
