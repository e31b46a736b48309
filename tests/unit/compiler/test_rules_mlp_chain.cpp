// The mlp_chain rule: chains of two or more Linear (+ ReLU) layers found (f32 and bf16; a chain cut
// where a layer's result has another reader, its first layer left out when its k is not a multiple
// of 8), refused with the reason off CUDA, search-only on CUDA, and its replacement
// (custom::MlpChain) equal to the original on the reference runtime.
#include <cmath>
#include <random>
#include <tuple>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "compiler/rules/rules.h"
#include "custom/mlp_chain/op.h"
#include "custom/mlp_chain/test_util.h"
#include "luminal/nn.h"
#include "luminal/reference.h"
#include "test_caps.h"

namespace luminal {
namespace {

namespace rules = compiler::rules;
namespace mt = mlp_chain_test;

std::vector<rules::RuleMatch> chain_matches(const Graph& g, const Backend* backend = nullptr) {
  auto ms = rules::find_matches({g, nullptr, backend});
  std::erase_if(ms, [](const auto& m) { return m.rule != "mlp_chain"; });
  return ms;
}

using test::ClaimingCuda;

size_t chain_nodes(const Graph& g) {
  size_t n = 0;
  for (NodeId id = 0; id < g.size(); ++id)
    n += g.node(id).kind == OpKind::Custom && g.node(id).custom->name() == "mlp_chain";
  return n;
}

TEST(MlpChainRule, FindsTheChainAndItsReplacementEqualsTheGraph) {
  for (DType dt : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    const mt::Case c = mt::random_case(5, 24, {16, 40, 1}, {true, true, false}, dt, 9);
    Graph g;
    const mt::Bound b = mt::build(g, c, /*dynamic=*/true, /*chain=*/false);
    const auto ms = chain_matches(g);
    ASSERT_EQ(ms.size(), 1u);
    EXPECT_EQ(ms[0].summary, fmt::format("3 layers 24-16-40-1 (no relu), {}", dtype_name(dt)));
    ASSERT_EQ(ms[0].alternatives.size(), 3u);
    EXPECT_EQ(ms[0].alternatives[0].name, "chain");
    EXPECT_EQ(ms[0].alternatives[1].name, "chain_m32");
    EXPECT_EQ(ms[0].alternatives[2].name, "decomposed");
    EXPECT_EQ(ms[0].alternatives[0].refusal, "the chain kernel is CUDA's (elsewhere the layers' GEMMs run as they are)");
    EXPECT_EQ(chain_matches(g, test::kernel_claiming_backend().get())[0].alternatives[0].refusal,
              ms[0].alternatives[0].refusal) << "a host backend has no chain kernel";
    const ClaimingCuda cuda;
    const auto on_cuda = chain_matches(g, &cuda);
    ASSERT_EQ(on_cuda.size(), 1u);
    EXPECT_EQ(on_cuda[0].alternatives[0].refusal, dt == DType::BF16 ? "" : "the CUDA kernel multiplies f16 / bf16, not f32");
    EXPECT_TRUE(on_cuda[0].alternatives[0].search_only) << "not measured on a GPU: the search's to take";
    EXPECT_TRUE(on_cuda[0].alternatives[1].search_only);
    EXPECT_EQ(rules::auto_choice(on_cuda[0]).name, "decomposed");
    EXPECT_FALSE(rules::apply(g, on_cuda, "auto").rebuilt);
    EXPECT_EQ(rules::apply(g, on_cuda, "chain").rebuilt.has_value(), dt == DType::BF16);

    for (size_t alt : {0u, 1u}) {
      const rules::Rebuilt r = rules::rebuild(g, {ms[0].alternatives[alt].replacement});
      EXPECT_EQ(chain_nodes(*r.graph), 1u);
      ReferenceRuntime before(g), after(*r.graph);
      mt::set_inputs(before, b, c);
      mt::Bound moved = b;
      moved.x = rules::moved(r, b.x);
      for (size_t l = 0; l < b.w.size(); ++l) moved.w[l] = rules::moved(r, b.w[l]), moved.b[l] = rules::moved(r, *b.b[l]);
      mt::set_inputs(after, moved, c);
      before.execute({{"m", 5}});
      after.execute({{"m", 5}});
      const std::vector<float> want = before.get_f32(b.out), got = after.get_f32(rules::moved(r, b.out));
      ASSERT_EQ(got.size(), want.size());
      double biggest = 0;
      for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_EQ(got[i], want[i]) << i << ": the same ops in the same order";
        biggest = std::max(biggest, double(std::abs(want[i])));
      }
      EXPECT_GT(biggest, 0.05);
    }
  }
}

// DLRM-v2's dense tail in miniature (nn::low_rank_cross twice, then Linear + ReLU and a logit): one
// chain of 6 layers whose replacement equals the graph; the cross_layer rule still finds each W.
TEST(MlpChainRule, CrossLayersAndTheTopMlpAreOneChain) {
  for (DType dt : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    Graph g;
    const Expr m = Expr::sym("m");
    const GraphTensor x0 = g.named_tensor("x0", {m, 24}, dt);
    GraphTensor x = x0;
    std::vector<GraphTensor> params;
    for (int l = 0; l < 2; ++l) {
      params.push_back(g.named_tensor(fmt::format("v{}", l), {8, 24}, dt));
      params.push_back(g.named_tensor(fmt::format("w{}", l), {24, 8}, dt));
      params.push_back(g.named_tensor(fmt::format("b{}", l), {24}, dt));
      x = nn::low_rank_cross(x0, x, params[params.size() - 3], params[params.size() - 2], params.back());
    }
    for (auto [n, k, relu] : {std::tuple{16, 24, true}, {1, 16, false}}) {
      params.push_back(g.named_tensor(fmt::format("tw{}", n), {n, k}, dt));
      params.push_back(g.named_tensor(fmt::format("tb{}", n), {n}, dt));
      x = nn::linear(x, params[params.size() - 2], params.back());
      if (relu) x = x.relu();
    }
    const GraphTensor out = x.output();
    const ClaimingCuda cuda;
    const auto ms = chain_matches(g, &cuda);
    ASSERT_EQ(ms.size(), 1u);
    EXPECT_EQ(ms[0].summary, fmt::format("6 layers 24-cross(r8)-cross(r8)-16-1 (no relu), {}", dtype_name(dt)));
    size_t crosses = 0;
    for (const auto& mm : rules::find_matches({g, nullptr, &cuda})) crosses += mm.rule == "cross_layer";
    EXPECT_EQ(crosses, 2u);
    // With the cross layers' own replacements chosen too (the search picks per match): theirs
    // become dead code under the chain.
    std::vector<rules::Replacement> reps{ms[0].alternatives[0].replacement};
    for (const auto& mm : rules::find_matches({g, nullptr, &cuda}))
      if (mm.rule == "cross_layer") reps.push_back(mm.alternatives[0].replacement);
    ASSERT_EQ(reps.size(), 3u);
    const rules::Rebuilt r = rules::rebuild(g, reps);
    ASSERT_EQ(chain_nodes(*r.graph), 1u);
    ReferenceRuntime before(g), after(*r.graph);
    std::mt19937 rng(7);
    std::uniform_int_distribution<int> q(-64, 64);
    for (const GraphTensor& t : [&] { auto all = params; all.push_back(x0); return all; }()) {
      std::vector<float> v(size_t(t.dims()[0].as_const().value_or(5) * (t.rank() == 2 ? t.dims()[1].as_const().value() : 1)));
      for (float& e : v) e = float(q(rng)) / 128;
      mt::set_floats(before, t, v);
      mt::set_floats(after, rules::moved(r, t), v);
    }
    before.execute({{"m", 5}});
    after.execute({{"m", 5}});
    const std::vector<float> want = before.get_f32(out), got = after.get_f32(rules::moved(r, out));
    ASSERT_EQ(got.size(), 5u);
    for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << i << ": the same ops in the same order";
  }
}

TEST(MlpChainRule, CutsWhereAResultHasAnotherReaderAndSkipsAnUnalignedFirstLayer) {
  const ClaimingCuda cuda;
  {  // Layer 0's result is also an output: the chain is layers 1 and 2.
    Graph g;
    GraphTensor x = g.named_tensor("x", {Expr::sym("m"), 24}, DType::BF16), y = x;
    std::vector<int64_t> widths{16, 40, 8};
    int64_t in = 24;
    for (size_t l = 0; l < widths.size(); ++l) {
      y = y.matmul(g.named_tensor(fmt::format("w{}", l), {widths[l], in}, DType::BF16).transpose(0, 1)) +
          g.named_tensor(fmt::format("b{}", l), {widths[l]}, DType::BF16);
      y = y.relu();
      if (l == 0) y.output();
      in = widths[l];
    }
    y.output();
    const auto ms = chain_matches(g, &cuda);
    ASSERT_EQ(ms.size(), 1u);
    EXPECT_EQ(ms[0].summary, "2 layers 16-40-8, bf16");
  }
  {  // DLRM's bottom MLP: 13 dense features first; the chain starts after that layer.
    Graph g;
    const mt::Case c = mt::random_case(5, 13, {512, 256, 128}, {true, true, true}, DType::BF16, 4);
    mt::build(g, c, true, false);
    const auto ms = chain_matches(g, &cuda);
    ASSERT_EQ(ms.size(), 1u);
    EXPECT_EQ(ms[0].summary, "2 layers 512-256-128, bf16");
    EXPECT_EQ(ms[0].alternatives[0].refusal, "");
  }
  {  // The first layer reads a slice of a wider tensor: the chain starts after it.
    Graph g;
    GraphTensor y = g.named_tensor("wide", {Expr::sym("m"), 32}, DType::BF16).slice(1, 8, 32);
    std::vector<int64_t> widths{16, 40, 8};
    int64_t in = 24;
    for (size_t l = 0; l < widths.size(); ++l) {
      y = (y.matmul(g.named_tensor(fmt::format("w{}", l), {widths[l], in}, DType::BF16).transpose(0, 1)) +
           g.named_tensor(fmt::format("b{}", l), {widths[l]}, DType::BF16)).relu();
      in = widths[l];
    }
    y.output();
    const auto ms = chain_matches(g, &cuda);
    ASSERT_EQ(ms.size(), 1u);
    EXPECT_EQ(ms[0].summary, "2 layers 16-40-8, bf16");
  }
  {  // One layer, or two whose first has k 13: nothing to chain.
    Graph g;
    mt::build(g, mt::random_case(5, 13, {16, 8}, {true, true}, DType::BF16, 5), true, false);
    EXPECT_TRUE(chain_matches(g, &cuda).empty());
    Graph one;
    mt::build(one, mt::random_case(5, 16, {8}, {true}, DType::BF16, 6), true, false);
    EXPECT_TRUE(chain_matches(one, &cuda).empty());
  }
  {  // A layer without bias ends nothing and starts nothing (the cross layer's V GEMM looks so).
    Graph g;
    GraphTensor y = g.named_tensor("x", {Expr::sym("m"), 16}, DType::BF16);
    y = y.matmul(g.named_tensor("v", {8, 16}, DType::BF16).transpose(0, 1));
    y = (y.matmul(g.named_tensor("w", {16, 8}, DType::BF16).transpose(0, 1)) + g.named_tensor("b", {16}, DType::BF16)).relu();
    y.output();
    EXPECT_TRUE(chain_matches(g, &cuda).empty());
  }
}

}  // namespace
}  // namespace luminal
