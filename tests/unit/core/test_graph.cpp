// Graph: leaf constructors, node validation, queries and the debug listing.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>

#include "luminal/graph.h"
#include "luminal/tensor.h"
#include "unit/core/core_test_util.h"

namespace luminal {
namespace {

TEST(Graph, NamedTensorIsAnInput) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, Expr::sym("batch")}, DType::F16);
  ASSERT_EQ(g.size(), 1u);
  const Node& n = g.node(x.id);
  EXPECT_EQ(n.kind, OpKind::Input);
  EXPECT_EQ(n.name, "x");
  EXPECT_EQ(n.dtype, DType::F16);
  EXPECT_EQ(x.dtype, DType::F16);
  ASSERT_EQ(n.shape.size(), 2u);
  EXPECT_EQ(n.shape[0].as_const(), 2);
  EXPECT_EQ(n.shape[1].as_sym(), "batch");
  EXPECT_TRUE(n.inputs.empty());
  EXPECT_FALSE(n.persist);
  EXPECT_TRUE(x.view.is_contiguous());
}

TEST(Graph, DuplicateInputNameThrows) {
  Graph g;
  g.named_tensor("x", {2});
  expect_error([&] { g.named_tensor("x", {3}); }, "[named_tensor] duplicate input name 'x'");
  EXPECT_EQ(g.size(), 1u);
}

TEST(Graph, ConstantAndArange) {
  Graph g;
  GraphTensor c = g.constant(2.5, DType::F64);
  EXPECT_EQ(g.node(c.id).kind, OpKind::Constant);
  EXPECT_EQ(g.node(c.id).value, 2.5);
  EXPECT_EQ(c.dtype, DType::F64);
  EXPECT_EQ(c.rank(), 0);
  GraphTensor r = g.arange(Expr::sym("n"));
  EXPECT_EQ(g.node(r.id).kind, OpKind::Iota);
  EXPECT_EQ(r.dtype, DType::I32);
  ASSERT_EQ(r.rank(), 1);
  EXPECT_EQ(r.dims()[0].as_sym(), "n");
}

TEST(Graph, AddNodeRejectsMissingInputs) {
  Graph g;
  g.named_tensor("x", {2});
  Node n;
  n.kind = OpKind::Exp2;
  n.inputs.push_back({5, ShapeTracker::contiguous({2})});
  expect_error([&] { g.add_node(n); }, "[graph]");
  EXPECT_EQ(g.size(), 1u);
  n.inputs[0].node = 0;
  EXPECT_EQ(g.add_node(n), 1u);
}

TEST(Graph, FindInput) {
  Graph g;
  g.named_tensor("a", {1});
  GraphTensor b = g.named_tensor("b", {1});
  g.constant(1.0);
  EXPECT_EQ(g.find_input("b"), b.id);
  EXPECT_FALSE(g.find_input("c").has_value());
}

TEST(Graph, OutputsAndConsumerCounts) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {3});  // 0
  GraphTensor y = x.exp2();                  // 1 reads 0
  GraphTensor z = y * y;                     // 2 reads 1 twice
  GraphTensor zo = z;
  zo.output();  // 3 reads 2
  GraphTensor yo = y;
  yo.output();  // 4 reads 1
  EXPECT_EQ(g.outputs(), (std::vector<NodeId>{3, 4}));
  EXPECT_EQ(g.consumer_counts(), (std::vector<int>{1, 3, 1, 0, 0}));
  EXPECT_EQ(zo.id, 3u);
  EXPECT_EQ(g.node(3).inputs[0].node, 2u);
}

TEST(Graph, OpNames) {
  EXPECT_EQ(op_name(OpKind::Input), "Input");
  EXPECT_EQ(op_name(OpKind::SumReduce), "SumReduce");
  EXPECT_EQ(op_name(OpKind::LessThan), "LessThan");
  EXPECT_EQ(op_name(OpKind::Custom), "Custom");
}

TEST(Graph, ToStringListsEveryNode) {
  Graph g;
  GraphTensor x = g.named_tensor("feat", {2, 3});
  GraphTensor s = x.sum(1);
  s.output();
  std::string text = g.to_string();
  EXPECT_NE(text.find("Input"), std::string::npos);
  EXPECT_NE(text.find("'feat'"), std::string::npos);
  EXPECT_NE(text.find("SumReduce axis=1"), std::string::npos);
  EXPECT_NE(text.find("Output"), std::string::npos);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 3);
}

TEST(Graph, PersistOnlyOnInputs) {
  Graph g;
  GraphTensor w = g.named_tensor("w", {4}).persist();
  EXPECT_TRUE(g.node(w.id).persist);
  GraphTensor e = w.exp2();
  expect_error([&] { e.persist(); }, "[persist]");
  GraphTensor c = g.constant(1.0);
  expect_error([&] { c.persist(); }, "[persist]");
}

TEST(Graph, OutputReadsTheCurrentView) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 3});
  GraphTensor t = x.transpose(0, 1);
  t.output();
  const Node& out = g.node(t.id);
  EXPECT_EQ(out.kind, OpKind::Output);
  ASSERT_EQ(out.inputs.size(), 1u);
  EXPECT_EQ(out.inputs[0].node, x.id);
  EXPECT_EQ(out.inputs[0].view.strides[0].as_const(), 1);
  EXPECT_EQ(out.inputs[0].view.strides[1].as_const(), 3);
  EXPECT_EQ(out.shape[0].as_const(), 3);
  EXPECT_EQ(out.shape[1].as_const(), 2);
  EXPECT_TRUE(t.view.is_contiguous());
}

}  // namespace
}  // namespace luminal
