// Custom ops: tiny CustomOps defined here, whose reference decomposition defines the semantics.
// Expectations are hand-computed from that definition.
#include "luminal/custom_op.h"
#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

/// out = x + 1.
class AddOne final : public CustomOp {
 public:
  std::string name() const override { return "AddOne"; }
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& in) const override {
    return in.at(0) + 1.0;
  }
};

/// out = 2 x + y.
class Axpy final : public CustomOp {
 public:
  std::string name() const override { return "Axpy"; }
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& in) const override {
    return in.at(0) * 2.0 + in.at(1);
  }
};

/// out[i] = sum_j x[i, j] (changes the shape: the output shape comes from the decomposition).
class RowSum final : public CustomOp {
 public:
  std::string name() const override { return "RowSum"; }
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& in) const override {
    return in.at(0).sum(1);
  }
};

}  // namespace

LUMINAL_OP_CASE(CustomCase, add_one) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 2}), {1, -1, 0.5, 9});
  GraphTensor y = custom_op(std::make_shared<AddOne>(), {x});
  EXPECT_EQ(y.node().kind, OpKind::Custom);
  io.out(y, {2, 0, 1.5, 10});
  return io;
}

LUMINAL_OP_CASE(CustomCase, add_one_i32) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {3}, DType::I32), {-1, 0, 41});
  io.out(custom_op(std::make_shared<AddOne>(), {x}), {0, 1, 42});
  return io;
}

LUMINAL_OP_CASE(CustomCase, two_inputs) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {3}), {1, 2, 3});
  GraphTensor y = io.in(g.named_tensor("y", {3}), {10, 20, 30});
  io.out(custom_op(std::make_shared<Axpy>(), {x, y}), {12, 24, 36});
  return io;
}

LUMINAL_OP_CASE(CustomCase, shape_changing_in_graph) {
  // Custom op on a transposed view, feeding ordinary ops: (rowsum(x^T) + 1) with x [2, 3].
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 3}), {1, 2, 3, 4, 5, 6});
  GraphTensor r = custom_op(std::make_shared<RowSum>(), {x.transpose(0, 1)});
  io.out(custom_op(std::make_shared<AddOne>(), {r}), {6, 8, 10});
  return io;
}

}  // namespace luminal::ops_test
