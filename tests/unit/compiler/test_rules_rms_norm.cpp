// The RMSNorm rule: it finds every norm of a tiny Llama (2 * layers + 1, f32 and bf16) and of
// plain graphs (with and without a residual add in front, one row and many, symbolic rows), the
// "fused" alternative (custom::RmsNorm) computes the original's outputs on the reference runtime,
// and look-alikes (a mean over another axis, another eps expression or divisor, no weight) are
// not matched.
#include <gtest/gtest.h>

#include <random>

#include "compiler/rules/rules.h"
#include "custom/rms_norm/test_util.h"
#include "luminal/reference.h"
#include "luminal/models/llama.h"
#include "luminal/nn.h"

namespace luminal {
namespace {

namespace rules = compiler::rules;

std::vector<rules::RuleMatch> norms_in(const Graph& g) {
  std::vector<rules::RuleMatch> out;
  for (rules::RuleMatch& m : rules::find_matches(rules::RuleContext{g, nullptr}))
    if (m.rule == "rms_norm") out.push_back(std::move(m));
  return out;
}

std::vector<const custom::RmsNorm*> fused_nodes(const Graph& g) {
  std::vector<const custom::RmsNorm*> out;
  for (NodeId id = 0; id < g.size(); ++id)
    if (auto* op = dynamic_cast<const custom::RmsNorm*>(g.node(id).custom.get())) out.push_back(op);
  return out;
}

// A block's norms: a = x + h (a residual), out1 = norm(a) @ m, out2 = norm(a + out1).
struct Block {
  GraphTensor x, h, w1, w2, m, out1, out2;
};

Block block(Graph& g, Expr rows, int64_t d, DType dt, double eps) {
  Block b;
  b.x = g.named_tensor("x", {rows, d}, dt);
  b.h = g.named_tensor("h", {rows, d}, dt);
  b.w1 = g.named_tensor("w1", {d}, dt);
  b.w2 = g.named_tensor("w2", {d}, dt);
  b.m = g.named_tensor("m", {d, d}, dt);
  const GraphTensor a = b.x + b.h;
  b.out1 = nn::rms_norm(a, b.w1, eps).matmul(b.m);
  b.out2 = nn::rms_norm(a + b.out1, b.w2, eps);
  b.out1.output();
  b.out2.output();
  return b;
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

// Runs the block (moved into `r` when given) on the reference; returns out1 then out2.
std::vector<float> run_block(const Graph& g, const Block& b, const rules::Rebuilt* r, int64_t rows,
                             int64_t d, DType dt, bool symbolic) {
  auto mv = [&](const GraphTensor& t) { return r ? rules::moved(*r, t) : t; };
  ReferenceRuntime rt(const_cast<Graph&>(g));
  const size_t n = size_t(rows * d);
  norm_test::set_floats(rt, mv(b.x), random_floats(n, 1, -2, 2), dt);
  norm_test::set_floats(rt, mv(b.h), random_floats(n, 2, -2, 2), dt);
  norm_test::set_floats(rt, mv(b.w1), random_floats(size_t(d), 3, 0.5, 1.5), dt);
  norm_test::set_floats(rt, mv(b.w2), random_floats(size_t(d), 4, 0.5, 1.5), dt);
  norm_test::set_floats(rt, mv(b.m), random_floats(size_t(d * d), 5, -0.3f, 0.3f), dt);
  rt.execute(symbolic ? DynMap{{"s", rows}} : DynMap{});
  std::vector<float> out = rt.get_f32(mv(b.out1));
  for (float v : rt.get_f32(mv(b.out2))) out.push_back(v);
  return out;
}

TEST(RulesRmsNorm, FusedEqualsDecomposedOnBlocks) {
  for (DType dt : {DType::F32, DType::BF16})
    for (int64_t rows : {1, 7})
      for (bool symbolic : {false, true}) {
        SCOPED_TRACE(fmt::format("{} rows {}{}", dtype_name(dt), rows, symbolic ? " (symbolic)" : ""));
        const int64_t d = 48;
        Graph g;
        const Block b = block(g, symbolic ? Expr::sym("s") : Expr(rows), d, dt, 1e-5);
        const auto matches = norms_in(g);
        ASSERT_EQ(matches.size(), 2u);
        for (const rules::RuleMatch& m : matches) {
          ASSERT_EQ(m.alternatives.size(), 2u);
          EXPECT_EQ(m.alternatives[0].name, "fused");
          EXPECT_EQ(m.alternatives[0].refusal, "");
          EXPECT_EQ(m.alternatives[1].name, "decomposed");
          EXPECT_NE(m.summary.find(fmt::format("x 48 {}, eps 1e-05", dtype_name(dt))), std::string::npos)
              << m.summary;
        }
        const rules::Applied a = rules::apply(g, matches, "fused");
        ASSERT_TRUE(a.rebuilt);
        const auto ops = fused_nodes(*a.rebuilt->graph);
        ASSERT_EQ(ops.size(), 2u);
        for (const custom::RmsNorm* op : ops) EXPECT_EQ(op->eps(), 1e-5);  // exact, from the Constant
        EXPECT_FALSE(rules::apply(g, matches, "none").rebuilt);
        const std::vector<float> want = run_block(g, b, nullptr, rows, d, dt, symbolic);
        const std::vector<float> got = run_block(*a.rebuilt->graph, b, &*a.rebuilt, rows, d, dt, symbolic);
        // The decomposition is the same ops: the reference gives the same bits.
        EXPECT_EQ(got, want);
      }
}

TEST(RulesRmsNorm, FindsEveryNormOfATinyLlama) {
  models::LlamaConfig c;
  c.vocab_size = 16, c.hidden_size = 8, c.intermediate_size = 16, c.num_layers = 3;
  c.num_heads = 2, c.num_kv_heads = 1, c.head_dim = 4, c.max_position_embeddings = 32;
  c.rms_norm_eps = 1e-5;
  for (DType dt : {DType::F32, DType::BF16}) {
    Graph g;
    models::build_llama(g, c, 16, dt);
    const auto matches = norms_in(g);
    EXPECT_EQ(matches.size(), size_t(2 * c.num_layers + 1)) << dtype_name(dt);
    const rules::Applied a = rules::apply(g, matches, "auto");
    ASSERT_TRUE(a.rebuilt);
    const auto ops = fused_nodes(*a.rebuilt->graph);
    EXPECT_EQ(ops.size(), size_t(2 * c.num_layers + 1));
    for (const custom::RmsNorm* op : ops) EXPECT_EQ(op->eps(), 1e-5);
    for (const std::string& line : a.report) EXPECT_NE(line.find("-> fused"), std::string::npos) << line;
  }
}

// x [r, d]: look-alikes of nn::rms_norm that compute something else.
TEST(RulesRmsNorm, LookAlikesAreNotMatched) {
  const int64_t r = 3, d = 8;
  auto expect_none = [&](const char* what, auto make) {
    Graph g;
    const GraphTensor x = g.named_tensor("x", {r, d}), w = g.named_tensor("w", {d});
    GraphTensor out = make(x, w);
    out.output();
    EXPECT_EQ(norms_in(g).size(), 0u) << what;
  };
  auto rows_of = [](const GraphTensor& t) {  // a per-row value broadcast along the last axis
    GraphTensor e = t;
    e.view = t.view.expand(1, d);
    return e;
  };
  expect_none("the mean over the rows", [&](const GraphTensor& x, const GraphTensor& w) {
    GraphTensor inv = ((x * x).mean(0) + 1e-5).sqrt().recip();
    GraphTensor e = inv;
    e.view = inv.view.expand(0, r);
    return x * e * w;
  });
  expect_none("1 / (sqrt(mean) + eps)", [&](const GraphTensor& x, const GraphTensor& w) {
    return x * rows_of(((x * x).mean(1).sqrt() + 1e-5).recip()) * w;
  });
  expect_none("sum / (d + 1)", [&](const GraphTensor& x, const GraphTensor& w) {
    return x * rows_of(((x * x).sum(1) * (1.0 / (d + 1)) + 1e-5).sqrt().recip()) * w;
  });
  expect_none("sqrt instead of rsqrt", [&](const GraphTensor& x, const GraphTensor& w) {
    return x * rows_of(((x * x).mean(1) + 1e-5).sqrt()) * w;
  });
  expect_none("no weight", [&](const GraphTensor& x, const GraphTensor&) { return x.rms_norm(-1, 1e-5); });
  expect_none("a weight per element", [&](const GraphTensor& x, const GraphTensor&) {
    return x.rms_norm(-1, 1e-5) * x.graph->named_tensor("w2", {r, d});
  });
}

TEST(RulesRmsNorm, ZeroEpsAndOtherEpsValues) {
  for (double eps : {0.0, 1e-6, 0.25}) {
    Graph g;
    const GraphTensor x = g.named_tensor("x", {4, 16}), w = g.named_tensor("w", {16});
    nn::rms_norm(x, w, eps).output();
    const auto matches = norms_in(g);
    ASSERT_EQ(matches.size(), 1u) << eps;
    const rules::Applied a = rules::apply(g, matches, "fused");
    ASSERT_TRUE(a.rebuilt);
    const auto ops = fused_nodes(*a.rebuilt->graph);
    ASSERT_EQ(ops.size(), 1u);
    EXPECT_EQ(ops[0]->eps(), eps);
  }
}

// x also scaled by another per-row value first (a look-alike y the matcher must pass over).
TEST(RulesRmsNorm, AnotherBroadcastMultiplyOfXComesFirst) {
  Graph g;
  const GraphTensor x = g.named_tensor("x", {4, 16}), w = g.named_tensor("w", {16});
  GraphTensor other = x.graph->named_tensor("v", {4});
  other.view = other.view.expand(1, 16);
  (x * other).output();
  nn::rms_norm(x, w, 1e-6).output();
  const auto matches = norms_in(g);
  ASSERT_EQ(matches.size(), 1u);
  ASSERT_TRUE(rules::apply(g, matches, "fused").rebuilt);
}

// Many concrete rows are probed at a few; rows == D (the substitution also shrinks D) and a 3-D x
// still match, through the full-size probe.
TEST(RulesRmsNorm, ManyRowsSquareAndThreeDimensionalX) {
  for (std::vector<Expr> dims : {std::vector<Expr>{512, 64}, std::vector<Expr>{16, 16},
                                 std::vector<Expr>{4, 5, 16}}) {
    Graph g;
    const GraphTensor x = g.named_tensor("x", dims, DType::BF16);
    nn::rms_norm(x, g.named_tensor("w", {dims.back()}, DType::BF16), 1e-6).output();
    const auto matches = norms_in(g);
    ASSERT_EQ(matches.size(), 1u) << shape_string(dims);
    EXPECT_EQ(matches[0].alternatives[0].refusal, "");
  }
}

}  // namespace
}  // namespace luminal
