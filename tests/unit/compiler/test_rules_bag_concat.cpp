// The bag_concat rule: x0 = [x, bag_0, ..., bag_{F-1}] of EmbeddingBags found in a graph, refused for
// look-alikes (x not first, a bag missing, one bag), and its replacement (custom::BagConcat) equal
// to the original on the reference runtime, flat and stacked.
#include <cmath>
#include <random>

#include <fmt/format.h>

#include <gtest/gtest.h>

#include "compiler/rules/rules.h"
#include "custom/bag_concat/op.h"
#include "custom/embedding_bag/op.h"
#include "luminal/reference.h"

namespace luminal {
namespace {

struct Bags {
  GraphTensor x;
  std::vector<GraphTensor> tables, indices, offsets, bags;
};

// x [5, 4] and `n` EmbeddingBags over tables of 7 rows (3 indices per bag).
Bags declare(Graph& g, int n) {
  Bags b;
  b.x = g.named_tensor("x", {5, 4});
  for (int k = 0; k < n; ++k) {
    b.tables.push_back(g.named_tensor(fmt::format("t{}", k), {7, 4}));
    b.indices.push_back(g.named_tensor(fmt::format("i{}", k), {15}, DType::I32));
    b.offsets.push_back(g.named_tensor(fmt::format("o{}", k), {5}, DType::I32));
    b.bags.push_back(custom::embedding_bag(b.tables[k], b.indices[k], b.offsets[k], nn::BagMode::Sum));
  }
  return b;
}

std::vector<compiler::rules::RuleMatch> bag_concat_matches(const Graph& g) {
  auto ms = compiler::rules::find_matches({g, nullptr});
  std::erase_if(ms, [](const auto& m) { return m.rule != "bag_concat"; });
  return ms;
}

void set_inputs(Runtime& rt, const Bags& b, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(20), t(28);
  for (float& v : x) v = u(rng);
  rt.set_data(b.x, std::span<const float>(x));
  for (size_t k = 0; k < b.tables.size(); ++k) {
    for (float& v : t) v = u(rng);
    std::vector<int32_t> idx(15), off{0, 3, 6, 9, 12};
    for (int32_t& i : idx) i = int32_t(rng() % 7);
    rt.set_data(b.tables[k], std::span<const float>(t));
    rt.set_data(b.indices[k], std::span<const int32_t>(idx));
    rt.set_data(b.offsets[k], std::span<const int32_t>(off));
  }
}

TEST(BagConcatRule, FindsXThenTheBagsAndItsReplacementEqualsTheGraph) {
  for (bool stacked : {false, true}) {
    Graph g;
    const Bags b = declare(g, 3);
    GraphTensor x0 = stacked ? concat({b.x.expand_dim(1, 1), b.bags[0].expand_dim(1, 1), b.bags[1].expand_dim(1, 1),
                                       b.bags[2].expand_dim(1, 1)}, 1)
                             : concat({b.x, b.bags[0], b.bags[1], b.bags[2]}, 1);
    const GraphTensor out = (x0 * 2.0).output();
    const auto ms = bag_concat_matches(g);
    ASSERT_EQ(ms.size(), 1u) << (stacked ? "stacked" : "flat");
    ASSERT_EQ(ms[0].alternatives.size(), 3u);
    EXPECT_EQ(ms[0].alternatives[0].name, "fused");
    EXPECT_EQ(ms[0].alternatives[1].name, "split");
    EXPECT_TRUE(ms[0].alternatives[1].search_only) << "one kernel more than fused: pays only with graph branches";
    EXPECT_EQ(ms[0].alternatives[2].name, "decomposed");
    // A named alternative: split is asked for, refused here (no backend), the graph kept, and said why.
    EXPECT_EQ(compiler::rules::apply(g, ms, "split").report,
              std::vector<std::string>{"bag_concat: x0 = [x, 3 bags] x 4, f32 -> decomposed; split: no bag_concat "
                                       "kernel on this backend"});
    for (size_t a = 0; a < 2; ++a) {
      SCOPED_TRACE(ms[0].alternatives[a].name);
      EXPECT_EQ(ms[0].alternatives[a].refusal, "no bag_concat kernel on this backend");  // no backend here
      const compiler::rules::Rebuilt r = compiler::rules::rebuild(g, {ms[0].alternatives[a].replacement});
      ReferenceRuntime before(g), after(*r.graph);
      set_inputs(before, b, 4);
      Bags moved = b;
      moved.x = compiler::rules::moved(r, b.x);
      for (size_t k = 0; k < 3; ++k) {
        moved.tables[k] = compiler::rules::moved(r, b.tables[k]);
        moved.indices[k] = compiler::rules::moved(r, b.indices[k]);
        moved.offsets[k] = compiler::rules::moved(r, b.offsets[k]);
      }
      set_inputs(after, moved, 4);
      before.execute();
      after.execute();
      const std::vector<float> want = before.get_f32(out), got = after.get_f32(compiler::rules::moved(r, out));
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
      EXPECT_GT(std::abs(want[7]) + std::abs(want[30]), 0.f);
      size_t ops = 0;  // BagConcat nodes in the rebuilt graph: fused has x, split not
      for (NodeId id = 0; id < r.graph->size(); ++id) {
        const auto* op = dynamic_cast<const custom::BagConcat*>(r.graph->node(id).custom.get());
        if (op == nullptr) continue;
        ++ops;
        EXPECT_EQ(op->shape().with_x, a == 0);
      }
      EXPECT_EQ(ops, 1u);
    }
  }
}

TEST(BagConcatRule, LookAlikesAreNotMatched) {
  {
    Graph g;
    const Bags b = declare(g, 2);
    concat({b.bags[0], b.x, b.bags[1]}, 1).output();  // x not first
    EXPECT_TRUE(bag_concat_matches(g).empty());
  }
  {
    Graph g;
    const Bags b = declare(g, 3);
    concat({b.x, b.bags[0], b.bags[1]}, 1).output();  // a bag left out
    (b.bags[2] * 1.0).output();
    EXPECT_TRUE(bag_concat_matches(g).empty());
  }
  {
    Graph g;
    const Bags b = declare(g, 2);
    // Padded views like a concat's, but x and bag_0 overlap in the first block: not a concat.
    (b.x.pad(1, 0, 8) + b.bags[0].pad(1, 0, 8) + b.bags[1].pad(1, 8, 0)).output();
    EXPECT_TRUE(bag_concat_matches(g).empty());
  }
}

}  // namespace
}  // namespace luminal
