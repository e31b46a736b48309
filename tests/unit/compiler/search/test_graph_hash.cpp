// graph_hash: equal for identically built graphs, different when anything structural changes.
#include "compiler/search/graph_hash.h"

#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "luminal/custom_op.h"
#include "luminal/tensor.h"

namespace luminal::compiler::search {
namespace {

// out = x * s: two instances differ only in a parameter that name() does not show.
class Scale final : public CustomOp {
 public:
  explicit Scale(double s) : s_(s) {}
  std::string name() const override { return "scale"; }
  GraphTensor decompose(Graph&, const std::vector<GraphTensor>& in) const override {
    return in[0] * s_;
  }

 private:
  double s_;
};

// Builds y = relu(x @ w + b) with the knobs a test varies.
struct Build {
  int64_t n = 8;
  DType dtype = DType::F32;
  bool transpose_w = false;
  bool sum = true;
  bool persist = true;
  double scale = 0;  // != 0: a Scale custom op at the end
};

uint64_t hash_of(const Build& o) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {Expr::sym("batch"), 16}, o.dtype);
  // transpose_w: the same logical [16, n] weight, stored [n, 16] and read through a transposed
  // view.
  GraphTensor w = o.transpose_w ? g.named_tensor("w", {o.n, 16}, o.dtype)
                                : g.named_tensor("w", {16, o.n}, o.dtype);
  if (o.persist) w.persist();
  GraphTensor y = x.matmul(o.transpose_w ? w.transpose(0, 1) : w).relu();
  y = o.sum ? y.sum(1) : y.max(1);
  if (o.scale != 0) y = custom_op(std::make_shared<Scale>(o.scale), {y});
  y.output();
  return graph_hash(g);
}

TEST(GraphHash, IdenticallyBuiltGraphsHashEqual) {
  EXPECT_EQ(hash_of({}), hash_of({}));
  EXPECT_EQ(hash_of({.scale = 2}), hash_of({.scale = 2}));
}

TEST(GraphHash, AnyStructuralChangeChangesTheHash) {
  const uint64_t base = hash_of({});
  EXPECT_NE(base, hash_of({.n = 9}));                // a shape
  EXPECT_NE(base, hash_of({.dtype = DType::BF16}));  // a dtype
  EXPECT_NE(base, hash_of({.transpose_w = true}));   // a view
  EXPECT_NE(base, hash_of({.sum = false}));          // an op
  EXPECT_NE(base, hash_of({.persist = false}));      // a weight is not persisted
  EXPECT_NE(base, hash_of({.scale = 2}));            // a custom op
  EXPECT_NE(hash_of({.scale = 2}),
            hash_of({.scale = 3}));  // its parameter, through its decomposition
}

TEST(GraphHash, ViewsAndSymbolsCount) {
  auto with = [](const std::function<GraphTensor(GraphTensor)>& f, const char* sym = "n") {
    Graph g;
    f(g.named_tensor("x", {Expr::sym(sym), 6})).output();
    return graph_hash(g);
  };
  const uint64_t plain = with([](GraphTensor t) { return t * 2.0; });
  EXPECT_EQ(plain, with([](GraphTensor t) { return t * 2.0; }));
  EXPECT_NE(plain, with([](GraphTensor t) { return t * 2.0; }, "m"));  // another symbol
  EXPECT_NE(plain, with([](GraphTensor t) { return t * 3.0; }));       // a constant's value
  EXPECT_NE(with([](GraphTensor t) { return t.slice(1, 0, 3) * 2.0; }),
            with([](GraphTensor t) { return t.slice(1, 1, 4) * 2.0; }));  // a view's offset
  EXPECT_NE(with([](GraphTensor t) { return t.pad(1, 1, 0) * 2.0; }),
            with([](GraphTensor t) { return t.pad(1, 0, 1) * 2.0; }));  // its padding
}

}  // namespace
}  // namespace luminal::compiler::search
