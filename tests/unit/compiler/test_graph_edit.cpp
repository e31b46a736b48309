// The rules' graph surgery: probing a region on the reference runtime, rebuilding a graph with a
// node computed another way (consumers, outputs and inputs follow it).
#include <cstring>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "compiler/rules/graph_edit.h"
#include "expect_error.h"
#include "luminal/reference.h"

namespace luminal::compiler::rules {
namespace {

TEST(GraphEdit, ProbeEvaluatesARegionFromItsLeaves) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {Expr::sym("b"), 3});
  GraphTensor w = g.named_tensor("w", {3});
  GraphTensor y = ((x * w) + 1.0).relu();
  // Leaves: x and w; the constant 1 and the relu's zero live inside the region.
  const auto leaves = region_leaves(g, y.id, [](NodeId) { return false; });
  EXPECT_EQ(leaves, (std::set<NodeId>{x.id, w.id}));
  const std::vector<double> xv{1, -2, 3, -4, 5, -6}, wv{2, 1, -1};
  auto got = probe(g, y.id, {{x.id, xv}, {w.id, wv}}, nullptr, {{"b", 2}});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::vector<double>{3, 0, 0, 0, 6, 7}));
  // A missing leaf (w unknown), or the wrong number of values, is no answer rather than a guess.
  EXPECT_FALSE(probe(g, y.id, {{x.id, xv}}, nullptr, {{"b", 2}}).has_value());
  EXPECT_FALSE(probe(g, y.id, {{x.id, xv}, {w.id, {1}}}, nullptr, {{"b", 2}}).has_value());
  // A known Input (a constant) is read from the lookup.
  const std::vector<float> wf{2, 1, -1};
  auto known = [&](NodeId id) -> std::optional<std::span<const std::byte>> {
    if (id != w.id) return std::nullopt;
    return std::as_bytes(std::span(wf));
  };
  auto got2 = probe(g, y.id, {{x.id, xv}}, known, {{"b", 2}});
  ASSERT_TRUE(got2.has_value());
  EXPECT_EQ(*got2, *got);
}

TEST(GraphEdit, ProbeAtASmallerBatch) {
  // y = (x^T * 2)^T over a concrete batch of 64, probed at batch 2: the transposed view's
  // batch stride scales with it.
  Graph g;
  GraphTensor x = g.named_tensor("x", {64, 3});
  GraphTensor y = (x.transpose(0, 1) * 2.0).contiguous().transpose(0, 1) + 1.0;
  const std::vector<double> xv{1, 2, 3, 4, 5, 6};
  auto got = probe(g, y.id, {{x.id, xv}}, nullptr, {}, ProbeBatch{64, 2});
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, (std::vector<double>{3, 5, 7, 9, 11, 13}));
  // A view that reads a row past the smaller batch (row 63) is refused, not read out of bounds.
  GraphTensor last = x.slice(0, 63, 64) * 1.0;
  EXPECT_FALSE(probe(g, last.id, {{x.id, xv}}, nullptr, {}, ProbeBatch{64, 2}).has_value());
}

TEST(GraphEdit, RebuildSubstitutesANodeForItsConsumers) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4});
  GraphTensor sq = x * x;        // replaced by x + x
  GraphTensor out = (sq * 3.0);  // a consumer created before the replacement exists
  out.output();
  Replacement r{sq.id, [&](Graph&, const std::function<GraphTensor(const GraphTensor&)>& map) {
                  return map(x) + map(x);
                }};
  const Rebuilt rb = rebuild(g, {r});
  const GraphTensor nx = moved(rb, x), nout = moved(rb, out);
  ReferenceRuntime rt(*rb.graph);
  rt.set_data(nx, std::vector<float>{1, 2, 3, 4});
  rt.execute();
  EXPECT_EQ(rt.get_f32(nout), (std::vector<float>{6, 12, 18, 24}));
  // A replacement must be a whole node of the target's shape.
  Replacement bad{sq.id, [&](Graph&, const std::function<GraphTensor(const GraphTensor&)>& map) {
                    return (map(x) + map(x)).slice(0, 0, 2);
                  }};
  test::expect_error([&] { rebuild(g, {bad}); }, {"[rules] replacement of node"});
  // Two replacements of one node: refused, not one of them dropped.
  test::expect_error([&] { rebuild(g, {r, r}); }, {fmt::format("[rules] two replacements of node {}", sq.id)});
}

// A state (output_into) points at its Input by id: the copy points at the copied Input.
TEST(GraphEdit, RebuildKeepsStatesPointingAtTheirInputs) {
  Graph g;
  GraphTensor pad = g.named_tensor("pad", {2});
  const GraphTensor pre = pad * 2.0;  // replaced by (pad + pad) * 1 (more nodes): later ids move
  GraphTensor pre_out = pre;
  pre_out.output();
  GraphTensor x = g.named_tensor("x", {3});
  (x * 2.0 + 1.0).output_into(x);
  Replacement r{pre.id, [&](Graph&, const std::function<GraphTensor(const GraphTensor&)>& map) {
                  return (map(pad) + map(pad)) * 1.0;
                }};
  const Rebuilt rb = rebuild(g, {r});
  const GraphTensor nx = moved(rb, x), npad = moved(rb, pad);
  ASSERT_NE(nx.id, x.id) << "the test needs the Input's id to move";
  int states = 0;
  for (NodeId o : rb.graph->outputs())
    if (rb.graph->node(o).writes_into >= 0) {
      EXPECT_EQ(rb.graph->node(o).writes_into, int64_t(nx.id));
      ++states;
    }
  EXPECT_EQ(states, 1);
  ReferenceRuntime rt(*rb.graph);
  rt.set_data(nx, std::vector<float>{1, 2, 3});
  for (int i = 0; i < 2; ++i) {
    rt.set_data(npad, std::vector<float>{0, 0});
    rt.execute();
  }
  Buffer b = rt.remove_buffer(nx);  // 1 -> 3 -> 7, 2 -> 5 -> 11, 3 -> 7 -> 15
  const auto* bytes = static_cast<const std::vector<std::byte>*>(b.impl.get());
  std::vector<float> v(3);
  std::memcpy(v.data(), bytes->data(), sizeof(float) * 3);
  EXPECT_EQ(v, (std::vector<float>{7, 11, 15}));
}

}  // namespace
}  // namespace luminal::compiler::rules
