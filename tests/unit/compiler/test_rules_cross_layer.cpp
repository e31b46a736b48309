// The cross_layer rule: every DCNv2 cross layer x0 * (u W^T + b) + x_l of a graph found (f32 and
// bf16; refused with the reason where no kernel runs it), look-alikes left alone, and its
// replacement (custom::CrossGemm) equal to the original on the reference runtime.
#include <cmath>
#include <random>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "compiler/rules/rules.h"
#include "custom/cross_gemm/op.h"
#include "custom/cross_gemm/test_util.h"
#include "luminal/nn.h"
#include "luminal/reference.h"
#include "test_caps.h"

namespace luminal {
namespace {

namespace rules = compiler::rules;

std::vector<rules::RuleMatch> cross_matches(const Graph& g, const Backend* backend = nullptr) {
  auto ms = rules::find_matches({g, nullptr, backend});
  std::erase_if(ms, [](const auto& m) { return m.rule != "cross_layer"; });
  return ms;
}

using test::ClaimingCuda;

// Two cross layers of width 24, rank 8, over x0 [m, 24].
struct Net {
  GraphTensor x0, out;
  std::vector<GraphTensor> v, w, b;
};

Net cross_net(Graph& g, DType dt) {
  Net n;
  n.x0 = g.named_tensor("x0", {Expr::sym("m"), 24}, dt);
  GraphTensor x = n.x0;
  for (int l = 0; l < 2; ++l) {
    n.v.push_back(g.named_tensor(fmt::format("v{}", l), {8, 24}, dt));
    n.w.push_back(g.named_tensor(fmt::format("w{}", l), {24, 8}, dt));
    n.b.push_back(g.named_tensor(fmt::format("b{}", l), {24}, dt));
    x = nn::low_rank_cross(n.x0, x, n.v[l], n.w[l], n.b[l]);
  }
  n.out = (x * 2.0).output();
  return n;
}

void set_inputs(Runtime& rt, const Net& n, const std::function<GraphTensor(const GraphTensor&)>& at, uint32_t seed) {
  const cross_gemm_test::Case c = cross_gemm_test::random_case(5, 24, 8, n.x0.dtype, seed);
  cross_gemm_test::set_floats(rt, at(n.x0), c.x0);
  for (size_t l = 0; l < n.v.size(); ++l) {
    std::vector<float> v(c.w.rbegin(), c.w.rend());  // [8, 24]: the same count as W's
    cross_gemm_test::set_floats(rt, at(n.v[l]), v);
    cross_gemm_test::set_floats(rt, at(n.w[l]), c.w);
    cross_gemm_test::set_floats(rt, at(n.b[l]), c.b);
  }
}

TEST(CrossLayerRule, FindsEveryLayerAndItsReplacementEqualsTheGraph) {
  for (DType dt : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    Graph g;
    const Net n = cross_net(g, dt);
    const auto ms = cross_matches(g);
    ASSERT_EQ(ms.size(), 2u);
    EXPECT_EQ(ms[0].summary, fmt::format("x0 * (u W^T + b) + x_l, n 24 k 8 {}", dtype_name(dt)));
    EXPECT_EQ(ms[0].alternatives[0].name, "fused");
    EXPECT_EQ(ms[0].alternatives[0].refusal, "no cross_gemm kernel on this backend");
    EXPECT_EQ(ms[0].alternatives.back().name, "decomposed");
    const auto claimed = cross_matches(g, test::kernel_claiming_backend().get());
    ASSERT_EQ(claimed.size(), 2u);
    EXPECT_EQ(claimed[1].alternatives[0].refusal, "") << "a host backend runs f32 too (oneDNN)";
    EXPECT_FALSE(claimed[1].alternatives[0].search_only);
    EXPECT_EQ(rules::auto_choice(claimed[1]).name, "fused");
    const ClaimingCuda cuda;
    const auto on_cuda = cross_matches(g, &cuda);
    EXPECT_EQ(on_cuda[1].alternatives[0].refusal,
              dt == DType::BF16 ? "" : "the CUDA kernel multiplies f16 / bf16, not f32");
    // Unmeasured on a GPU: offered to the search only; "auto" without a search keeps the graph.
    EXPECT_TRUE(on_cuda[1].alternatives[0].search_only);
    // And with 64-row tiles (the wgmma core's small-batch form), search-only too; the host has one form.
    ASSERT_EQ(on_cuda[1].alternatives.size(), 3u);
    EXPECT_EQ(on_cuda[1].alternatives[1].name, "fused_m64");
    EXPECT_TRUE(on_cuda[1].alternatives[1].search_only);
    EXPECT_EQ(claimed[1].alternatives.size(), 2u);
    {
      const rules::Rebuilt r64 = rules::rebuild(g, {on_cuda[0].alternatives[1].replacement});
      size_t tiles64 = 0;
      for (NodeId id = 0; id < r64.graph->size(); ++id)
        if (const auto* op = dynamic_cast<const custom::CrossGemm*>(r64.graph->node(id).custom.get()))
          tiles64 += op->shape().tile_m == 64;
      EXPECT_EQ(tiles64, 1u);
    }
    EXPECT_EQ(rules::auto_choice(on_cuda[1]).name, "decomposed");
    EXPECT_FALSE(rules::apply(g, on_cuda, "auto").rebuilt);
    EXPECT_EQ(rules::apply(g, on_cuda, "fused").rebuilt.has_value(), dt == DType::BF16);

    const rules::Rebuilt r = rules::rebuild(g, {ms[0].alternatives[0].replacement, ms[1].alternatives[0].replacement});
    size_t fused = 0;
    for (NodeId id = 0; id < r.graph->size(); ++id)
      fused += r.graph->node(id).kind == OpKind::Custom && r.graph->node(id).custom->name() == "cross_gemm";
    EXPECT_EQ(fused, 2u);
    ReferenceRuntime before(g), after(*r.graph);
    set_inputs(before, n, [](const GraphTensor& t) { return t; }, 3);
    set_inputs(after, n, [&](const GraphTensor& t) { return rules::moved(r, t); }, 3);
    before.execute({{"m", 5}});
    after.execute({{"m", 5}});
    const std::vector<float> want = before.get_f32(n.out), got = after.get_f32(rules::moved(r, n.out));
    ASSERT_EQ(got.size(), want.size());
    double biggest = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], 1e-6 + 1e-6 * std::abs(want[i])) << i;  // the same ops in the same order
      biggest = std::max(biggest, double(std::abs(want[i])));
    }
    EXPECT_GT(biggest, 0.1);
  }
}

// compile(): on CUDA the unmeasured kernel is a choice point the search may take, after the
// decomposition (the default plan's pick); named, it is taken; on a host backend it is the default.
TEST(CrossLayerRule, SearchOnlyOnCudaUntilMeasured) {
  Graph g;
  cross_net(g, DType::BF16);
  auto count = [](const Executable& e, const std::string& pick) {
    size_t n = 0;
    for (const std::string& line : e.rule_report())
      n += line.starts_with("cross_layer:") && line.find("-> " + pick) != std::string::npos;
    return n;
  };
  const Target cuda = std::make_shared<ClaimingCuda>();
  EXPECT_EQ(count(Executable(g, cuda), "decomposed"), 2u);
  CompileOptions named;
  named.alternative = "fused";
  EXPECT_EQ(count(Executable(g, cuda, named), "fused"), 2u);
  EXPECT_EQ(count(Executable(g, test::kernel_claiming_backend()), "fused"), 2u);
}

TEST(CrossLayerRule, LookAlikesAreNotMatched) {
  const Expr m = Expr::sym("m");
  auto inputs = [&](Graph& g) {
    return std::array<GraphTensor, 5>{g.named_tensor("u", {m, 8}), g.named_tensor("w", {24, 8}),
                                      g.named_tensor("b", {24}), g.named_tensor("x0", {m, 24}),
                                      g.named_tensor("xl", {m, 24})};
  };
  {
    Graph g;
    auto [u, w, b, x0, xl] = inputs(g);
    GraphTensor y = nn::linear(u, w, b);
    (x0 * y + xl).output();
    y.output();  // y is read elsewhere: fusing would not save its write
    EXPECT_TRUE(cross_matches(g).empty());
  }
  {
    Graph g;
    auto [u, w, b, x0, xl] = inputs(g);
    (x0 * u.matmul(w.transpose(0, 1)) + xl).output();  // no bias
    EXPECT_TRUE(cross_matches(g).empty());
  }
  {
    Graph g;
    auto [u, w, b, x0, xl] = inputs(g);
    (x0 + nn::linear(u, w, b) + xl).output();  // a sum, not a product with x0
    EXPECT_TRUE(cross_matches(g).empty());
  }
  {
    Graph g;
    const GraphTensor u = g.named_tensor("u", {8, 8}), w = g.named_tensor("w", {8, 8}), b = g.named_tensor("b", {8}),
                      x0 = g.named_tensor("x0", {8, 8}), xl = g.named_tensor("xl", {8, 8});
    (x0 * nn::linear(u, w, b) + xl.transpose(0, 1)).output();  // x_l read transposed
    EXPECT_TRUE(cross_matches(g).empty());
    (x0 * nn::linear(u, w, b) + xl).output();
    EXPECT_EQ(cross_matches(g).size(), 1u) << "the same graph with x_l read whole";
  }
}

}  // namespace
}  // namespace luminal
