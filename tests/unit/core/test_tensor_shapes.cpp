// GraphTensor decompositions: which nodes each op appends, their views and the result shapes.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "luminal/custom_op.h"
#include "luminal/nn.h"
#include "luminal/tensor.h"

namespace luminal {
namespace {

// Kinds of the nodes appended since `from`.
std::map<OpKind, int> kinds_since(const Graph& g, size_t from) {
  std::map<OpKind, int> m;
  for (size_t i = from; i < g.size(); ++i) ++m[g.nodes()[i].kind];
  return m;
}

// Constant dims as ints (every dim must be constant).
std::vector<int64_t> cdims(const GraphTensor& t) {
  std::vector<int64_t> d;
  for (const Expr& e : t.dims()) d.push_back(e.as_const().value());
  return d;
}

std::vector<int64_t> cstrides(const ShapeTracker& v) {
  std::vector<int64_t> s;
  for (const Expr& e : v.strides) s.push_back(e.as_const().value());
  return s;
}

using V = std::vector<int64_t>;

TEST(TensorShapes, ViewsAppendNoNodes) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 3, 4});
  size_t n = g.size();
  EXPECT_EQ(cdims(x.permute({2, 0, 1})), (V{4, 2, 3}));
  EXPECT_EQ(cdims(x.transpose(0, -1)), (V{4, 3, 2}));
  EXPECT_EQ(cdims(x.expand_dim(1, 5)), (V{2, 5, 3, 4}));
  EXPECT_EQ(cdims(x.expand_dim(-1, 5)), (V{2, 3, 4, 5}));
  EXPECT_EQ(cdims(x.split_dims(2, 2)), (V{2, 3, 2, 2}));
  EXPECT_EQ(cdims(x.merge_dims(0)), (V{6, 4}));
  EXPECT_EQ(cdims(x.merge_dims(-2)), (V{2, 12}));
  EXPECT_EQ(cdims(x.slice(1, 1, 3)), (V{2, 2, 4}));
  EXPECT_EQ(cdims(x.pad(2, 1, 2)), (V{2, 3, 7}));
  EXPECT_EQ(cdims(x.reshape({4, 6})), (V{4, 6}));
  EXPECT_EQ(cdims(x.expand_to({7, 2, 3, 4})), (V{7, 2, 3, 4}));
  EXPECT_EQ(cdims(x.contiguous()), (V{2, 3, 4}));
  EXPECT_EQ(x.contiguous().id, x.id);
  EXPECT_EQ(g.size(), n);
}

TEST(TensorShapes, CopiesWhenTheViewRequiresIt) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 3});
  size_t n = g.size();
  GraphTensor c = x.transpose(0, 1).contiguous();
  ASSERT_EQ(g.size(), n + 1);
  EXPECT_EQ(g.node(c.id).kind, OpKind::Cast);
  EXPECT_EQ(g.node(c.id).dtype, DType::F32);
  EXPECT_EQ(cdims(c), (V{3, 2}));
  EXPECT_EQ(cstrides(g.node(c.id).inputs[0].view), (V{1, 3}));

  n = g.size();
  GraphTensor m = x.transpose(0, 1).merge_dims(0);  // [3, 2] strides [1, 3]: not mergeable
  EXPECT_EQ(g.size(), n + 1);
  EXPECT_EQ(cdims(m), (V{6}));
  n = g.size();
  GraphTensor r = x.transpose(0, 1).reshape({6});
  EXPECT_EQ(g.size(), n + 1);
  EXPECT_EQ(cdims(r), (V{6}));
}

TEST(TensorShapes, MatmulIsOneMulAndOneSumReduce) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {2, 3});
  GraphTensor b = g.named_tensor("b", {3, 4});
  size_t n = g.size();
  GraphTensor c = a.matmul(b);
  EXPECT_EQ(kinds_since(g, n), (std::map<OpKind, int>{{OpKind::Mul, 1}, {OpKind::SumReduce, 1}}));
  EXPECT_EQ(cdims(c), (V{2, 4}));
  const Node& sum = g.node(c.id);
  EXPECT_EQ(sum.axis, 2);
  const Node& mul = g.node(sum.inputs[0].node);
  EXPECT_EQ(mul.shape.size(), 3u);  // [M, N, K]
  EXPECT_EQ(mul.shape[0].as_const(), 2);
  EXPECT_EQ(mul.shape[1].as_const(), 4);
  EXPECT_EQ(mul.shape[2].as_const(), 3);
  // A [2,3] strides [3,1] broadcast over N; B^T [4,3] strides [1,4] broadcast over M.
  EXPECT_EQ(mul.inputs[0].node, a.id);
  EXPECT_EQ(cstrides(mul.inputs[0].view), (V{3, 0, 1}));
  EXPECT_EQ(mul.inputs[1].node, b.id);
  EXPECT_EQ(cstrides(mul.inputs[1].view), (V{0, 1, 4}));
}

// relu(x) = Mul(x, Cast(LessThan(Constant 0, x))): the form the matmul epilogue matcher expects.
TEST(TensorShapes, ReluForm) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 3});
  GraphTensor r = x.relu();
  const Node& mul = g.node(r.id);
  ASSERT_EQ(mul.kind, OpKind::Mul);
  EXPECT_EQ(mul.inputs[0].node, x.id);
  const Node& cast = g.node(mul.inputs[1].node);
  ASSERT_EQ(cast.kind, OpKind::Cast);
  EXPECT_EQ(cast.dtype, DType::F32);
  const Node& lt = g.node(cast.inputs[0].node);
  ASSERT_EQ(lt.kind, OpKind::LessThan);
  EXPECT_EQ(lt.dtype, DType::Bool);
  EXPECT_EQ(g.node(lt.inputs[0].node).kind, OpKind::Constant);
  EXPECT_EQ(g.node(lt.inputs[0].node).value, 0.0);
  EXPECT_EQ(lt.inputs[1].node, x.id);
}

TEST(TensorShapes, MaximumIsOneAddAndOneMaxReduce) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {2, 3});
  GraphTensor b = g.named_tensor("b", {3});
  size_t n = g.size();
  GraphTensor m = a.maximum(b);
  EXPECT_EQ(kinds_since(g, n), (std::map<OpKind, int>{{OpKind::Add, 1}, {OpKind::MaxReduce, 1}}));
  EXPECT_EQ(cdims(m), (V{2, 3}));
  EXPECT_EQ(g.node(m.id).axis, 2);
}

TEST(TensorShapes, MatmulShapes) {
  Graph g;
  Expr batch = Expr::sym("batch");
  auto t = [&](std::vector<Expr> d) { return g.named_tensor("t" + std::to_string(g.size()), d); };
  EXPECT_EQ(cdims(t({5, 2, 3}).matmul(t({3, 4}))), (V{5, 2, 4}));
  EXPECT_EQ(cdims(t({2, 3}).matmul(t({5, 3, 4}))), (V{5, 2, 4}));
  EXPECT_EQ(cdims(t({6, 1, 2, 3}).matmul(t({5, 3, 4}))), (V{6, 5, 2, 4}));
  EXPECT_EQ(cdims(t({3}).matmul(t({3, 4}))), (V{4}));
  EXPECT_EQ(cdims(t({2, 3}).matmul(t({3}))), (V{2}));
  EXPECT_EQ(cdims(t({3}).matmul(t({3}))), (V{}));
  EXPECT_EQ(cdims(t({3}).matmul(t({5, 3, 4}))), (V{5, 4}));
  GraphTensor s = t({batch, 2, 3}).matmul(t({1, 3, 4}));
  ASSERT_EQ(s.rank(), 3);
  EXPECT_TRUE(s.dims()[0].same(batch));
  EXPECT_EQ(s.dims()[2].as_const(), 4);
  GraphTensor k = t({2, batch}).matmul(t({batch, 4}));
  EXPECT_EQ(cdims(k), (V{2, 4}));
}

TEST(TensorShapes, BroadcastingShapesAndStrides) {
  Graph g;
  Expr batch = Expr::sym("batch");
  GraphTensor a = g.named_tensor("a", {2, 3});
  GraphTensor row = g.named_tensor("row", {3});
  GraphTensor col = g.named_tensor("col", {2, 1});
  GraphTensor c = a + row;
  EXPECT_EQ(cdims(c), (V{2, 3}));
  EXPECT_EQ(cstrides(g.node(c.id).inputs[1].view), (V{0, 1}));
  GraphTensor d = col * row;
  EXPECT_EQ(cdims(d), (V{2, 3}));
  EXPECT_EQ(cstrides(g.node(d.id).inputs[0].view), (V{1, 0}));
  GraphTensor s = g.named_tensor("s", {batch, 1, 4}) + g.named_tensor("u", {3, 1});
  ASSERT_EQ(s.rank(), 3);
  EXPECT_TRUE(s.dims()[0].same(batch));
  EXPECT_EQ(s.dims()[1].as_const(), 3);
  EXPECT_EQ(s.dims()[2].as_const(), 4);
  GraphTensor k = a * 2.0;  // scalar: one Constant, broadcast by stride-0 views
  const Node& mul = g.node(k.id);
  EXPECT_EQ(g.node(mul.inputs[1].node).kind, OpKind::Constant);
  EXPECT_EQ(cstrides(mul.inputs[1].view), (V{0, 0}));
}

TEST(TensorShapes, ElementwiseDtypes) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {4});
  GraphTensor b = g.named_tensor("b", {4});
  for (GraphTensor t : {a.lt(b), a.gt(b), a.le(b), a.ge(b), a.eq(b), a.ne(b), a.gt(0.0)}) {
    EXPECT_EQ(t.dtype, DType::Bool);
    EXPECT_EQ(cdims(t), (V{4}));
  }
  for (GraphTensor t : {a - b, a / b, -a, a.maximum(b), a.minimum(b), a.exp(), a.log(), a.cos(),
                        a.abs(), a.pow(2.0), a.pow(b), a.relu(), a.sigmoid(), a.tanh(), a.silu(),
                        a.gelu(), 1.0 - a, 2.0 / a}) {
    EXPECT_EQ(t.dtype, DType::F32);
    EXPECT_EQ(cdims(t), (V{4}));
  }
  GraphTensor i = g.named_tensor("i", {4}, DType::I32);
  EXPECT_EQ((i % i).dtype, DType::I32);
  EXPECT_EQ(g.node((i % i).id).kind, OpKind::Mod);
  EXPECT_EQ(i.cast(DType::F16).dtype, DType::F16);
}

TEST(TensorShapes, Reductions) {
  Graph g;
  Expr batch = Expr::sym("batch");
  GraphTensor x = g.named_tensor("x", {2, 3, 4});
  GraphTensor s = x.sum(-1);
  EXPECT_EQ(g.node(s.id).kind, OpKind::SumReduce);
  EXPECT_EQ(g.node(s.id).axis, 2);
  EXPECT_EQ(cdims(s), (V{2, 3}));
  GraphTensor m = x.max(0);
  EXPECT_EQ(g.node(m.id).kind, OpKind::MaxReduce);
  EXPECT_EQ(cdims(m), (V{3, 4}));
  EXPECT_EQ(cdims(x.mean(1)), (V{2, 4}));
  GraphTensor y = g.named_tensor("y", {batch, 4});
  GraphTensor ym = y.mean(0);  // symbolic count
  EXPECT_EQ(cdims(ym), (V{4}));
  GraphTensor yr = y.mean(1);
  ASSERT_EQ(yr.rank(), 1);
  EXPECT_TRUE(yr.dims()[0].same(batch));
}

TEST(TensorShapes, NormsKeepTheShape) {
  Graph g;
  Expr batch = Expr::sym("batch");
  GraphTensor x = g.named_tensor("x", {batch, 8});
  for (GraphTensor t : {x.softmax(-1), x.layer_norm(1), x.rms_norm(-1), x.softmax(0)}) {
    ASSERT_EQ(t.rank(), 2);
    EXPECT_TRUE(t.dims()[0].same(batch));
    EXPECT_EQ(t.dims()[1].as_const(), 8);
  }
}

TEST(TensorShapes, ConcatAndSlicePad) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {2, 3});
  GraphTensor b = g.named_tensor("b", {2, 5});
  size_t n = g.size();
  GraphTensor c = a.concat_along(b, 1);
  EXPECT_EQ(cdims(c), (V{2, 8}));
  EXPECT_EQ(kinds_since(g, n), (std::map<OpKind, int>{{OpKind::Add, 1}}));
  EXPECT_EQ(cdims(concat({a, b, a}, -1)), (V{2, 11}));
  EXPECT_EQ(cdims(concat({a, a}, 0)), (V{4, 3}));
}

TEST(TensorShapes, GatherAndScatter) {
  Graph g;
  GraphTensor table = g.named_tensor("table", {10, 4});
  GraphTensor idx = g.named_tensor("idx", {2, 3}, DType::I64);
  GraphTensor r = table.gather(idx);
  EXPECT_EQ(g.node(r.id).kind, OpKind::Gather);
  EXPECT_EQ(cdims(r), (V{2, 3, 4}));
  EXPECT_EQ(r.dtype, DType::F32);
  GraphTensor rows = g.named_tensor("rows", {3}, DType::I32);
  GraphTensor src = g.named_tensor("src", {3, 4});
  GraphTensor s = table.scatter(rows, src);
  const Node& sn = g.node(s.id);
  EXPECT_EQ(sn.kind, OpKind::Scatter);
  ASSERT_EQ(sn.inputs.size(), 3u);
  EXPECT_EQ(sn.inputs[0].node, table.id);
  EXPECT_EQ(sn.inputs[1].node, rows.id);
  EXPECT_EQ(sn.inputs[2].node, src.id);
  EXPECT_EQ(cdims(s), (V{10, 4}));
  EXPECT_EQ(cdims(nn::gather_rows(table, rows)), (V{3, 4}));
  EXPECT_EQ(cdims(nn::scatter_rows(table, rows, src)), (V{10, 4}));
}

// Sums its input over axis 0 and casts to i32: shape [rest...], dtype i32.
struct SumToInt : CustomOp {
  std::string name() const override { return "sum_to_int"; }
  GraphTensor decompose(Graph&, const std::vector<GraphTensor>& in) const override {
    return in[0].sum(0).cast(DType::I32);
  }
};

TEST(TensorShapes, CustomOpTakesShapeFromDecomposition) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {5, 3});
  size_t n = g.size();
  GraphTensor y = custom_op(std::make_shared<SumToInt>(), {x.transpose(0, 1)});
  ASSERT_EQ(g.size(), n + 1);  // the decomposition ran on a scratch graph
  const Node& node = g.node(y.id);
  EXPECT_EQ(node.kind, OpKind::Custom);
  EXPECT_EQ(node.name, "sum_to_int");
  EXPECT_EQ(node.dtype, DType::I32);
  EXPECT_EQ(cdims(y), (V{5}));
  EXPECT_EQ(cstrides(node.inputs[0].view), (V{1, 3}));
  ASSERT_TRUE(node.custom);
}

TEST(TensorShapes, NnLinearAndEmbeddingBag) {
  Graph g;
  Expr batch = Expr::sym("batch");
  nn::Linear fc(g, "fc", 8, 4);
  EXPECT_EQ(g.node(fc.weight.id).name, "fc.weight");
  EXPECT_TRUE(g.node(fc.weight.id).persist);
  EXPECT_EQ(cdims(fc.weight), (V{4, 8}));
  ASSERT_TRUE(fc.bias.has_value());
  EXPECT_EQ(g.node(fc.bias->id).name, "fc.bias");
  GraphTensor y = fc(g.named_tensor("x", {batch, 8}));
  ASSERT_EQ(y.rank(), 2);
  EXPECT_TRUE(y.dims()[0].same(batch));
  EXPECT_EQ(y.dims()[1].as_const(), 4);
  // Linear = matmul, then Add of the bias read with stride 0 over the batch and 1 over out.
  const Node& add = g.node(y.id);
  ASSERT_EQ(add.kind, OpKind::Add);
  EXPECT_EQ(g.node(add.inputs[0].node).kind, OpKind::SumReduce);
  EXPECT_EQ(add.inputs[1].node, fc.bias->id);
  EXPECT_EQ(add.inputs[1].view.strides[0].as_const(), 0);
  EXPECT_EQ(add.inputs[1].view.strides[1].as_const(), 1);
  nn::Linear nob(g, "nob", 8, 4, false);
  EXPECT_FALSE(nob.bias.has_value());

  nn::EmbeddingBag emb(g, "emb.0", 100, 16, nn::BagMode::Mean);
  EXPECT_TRUE(g.node(emb.weight.id).persist);
  GraphTensor e = emb(g.named_tensor("idx", {6}, DType::I32), 3);
  EXPECT_EQ(cdims(e), (V{2, 16}));
}

}  // namespace
}  // namespace luminal
