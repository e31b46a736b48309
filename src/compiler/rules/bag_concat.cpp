// The bag_concat rule: DCNv2's x0 = [x, bag_0, ..., bag_{F-1}] (the bottom MLP's output beside every
// EmbeddingBag, concatenated along the feature axis: torch.cat / torch.stack in a torchrec-style
// model) offered as custom::BagConcat, one kernel writing x0, instead of a kernel per bag and a
// concat that tests every element against every part. Found by structure (the bags, and a node of
// x0's shape whose region reads only them and one [B, d] tensor) and checked by value (probe).
#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include "compiler/rules/dlrm_match.h"
#include "compiler/rules/rules.h"
#include "custom/bag_concat/op.h"
#include "custom/embedding_bag/op.h"

namespace luminal::compiler::rules {

namespace {

// The x0 a concat of these leaves should give: leaf order[f] fills feature block f.
std::vector<double> expected(const std::vector<std::vector<double>>& vals, const std::vector<size_t>& order,
                             int64_t batch, int64_t d) {
  const int64_t n = int64_t(order.size());
  std::vector<double> out(size_t(batch * n * d));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < n; ++f)
      for (int64_t k = 0; k < d; ++k) out[size_t((b * n + f) * d + k)] = vals[order[size_t(f)]][size_t(b * d + k)];
  return out;
}

// A match at root: x (the one leaf that is not a bag) and the bags in x0's feature order.
struct Found {
  NodeId root, x;
  std::vector<NodeId> bags;
};

std::optional<Found> match_at(const RuleContext& ctx, NodeId root, const std::vector<NodeId>& bags,
                              const Expr& batch, int64_t d, const DynMap& dyn) {
  const Graph& g = ctx.graph;
  auto is_part = [&](NodeId id) {
    const Node& n = g.node(id);
    return n.kind == OpKind::Custom || n.kind == OpKind::Input ||
           (n.shape.size() == 2 && n.shape[0].same(batch) && n.shape[1].as_const() == d);
  };
  std::vector<NodeId> leaves;
  for (NodeId id : region_leaves(g, root, is_part))
    if (!(ctx.constants && g.node(id).kind == OpKind::Input && ctx.constants(id))) leaves.push_back(id);
  if (leaves.size() != bags.size() + 1) return std::nullopt;
  std::optional<NodeId> x;
  for (NodeId id : leaves) {
    if (std::find(bags.begin(), bags.end(), id) != bags.end()) continue;
    if (x) return std::nullopt;
    x = id;
  }
  if (!x || !is_part(*x) || g.node(*x).dtype != g.node(root).dtype) return std::nullopt;
  const int64_t b = batch.eval(dyn), n = int64_t(leaves.size());
  // Which leaf lands in which feature block: every leaf constant at its own number.
  std::vector<ProbeLeaf> in;
  std::vector<std::vector<double>> vals;
  for (size_t i = 0; i < leaves.size(); ++i) {
    vals.emplace_back(size_t(b * d), double(i + 1));
    in.push_back({leaves[i], vals.back()});
  }
  auto got = probe(g, root, in, ctx.constants, dyn);
  if (!got || int64_t(got->size()) != b * n * d) return std::nullopt;
  std::vector<size_t> order;
  for (int64_t f = 0; f < n; ++f) {
    const double v = (*got)[size_t(f * d)];
    if (v < 1 || v > double(n) || v != std::round(v)) return std::nullopt;
    order.push_back(size_t(v) - 1);
  }
  if (leaves[order[0]] != *x) return std::nullopt;  // x comes first, as in DLRM_DCN
  // Then distinct values everywhere (small integers: exact in bf16).
  for (size_t i = 0; i < leaves.size(); ++i)
    for (int64_t e = 0; e < b * d; ++e) vals[i][size_t(e)] = double((e * 7 + int64_t(i) * 13) % 97) - 48;
  in.clear();
  for (size_t i = 0; i < leaves.size(); ++i) in.push_back({leaves[i], vals[i]});
  got = probe(g, root, in, ctx.constants, dyn);
  if (!got || *got != expected(vals, order, b, d)) return std::nullopt;
  Found f{root, *x, {}};
  for (size_t i = 1; i < order.size(); ++i) f.bags.push_back(leaves[order[i]]);
  return f;
}

}  // namespace

std::vector<RuleMatch> find_bag_concat(const RuleContext& ctx) {
  // DLRM-v1's interaction starts with the same concat: the dlrm rule (run before this one) covers
  // that model whole.
  if (ctx.earlier != nullptr &&
      std::any_of(ctx.earlier->begin(), ctx.earlier->end(), [](const RuleMatch& m) { return m.rule == "dlrm"; }))
    return {};
  const Graph& g = ctx.graph;
  std::vector<NodeId> bags;
  for (NodeId id = 0; id < g.size(); ++id)
    if (custom::unweighted_bag(g.node(id))) bags.push_back(id);
  if (bags.size() < 2) return {};
  const Node& first = g.node(bags[0]);
  const auto d = first.shape.size() == 2 ? first.shape[1].as_const() : std::nullopt;
  if (!d) return {};
  const custom::EmbeddingBag& first_op = *custom::unweighted_bag(first);
  for (NodeId b : bags) {
    const Node& n = g.node(b);
    const custom::EmbeddingBag& op = *custom::unweighted_bag(n);
    if (n.dtype != first.dtype || !same_exprs(n.shape, first.shape) || op.mode() != first_op.mode() ||
        op.closed() != first_op.closed() || g.node(n.inputs[1].node).dtype != g.node(first.inputs[1].node).dtype)
      return {};  // mixed bags: not DCNv2's uniform tables
  }
  const Expr batch = first.shape[0];
  DynMap dyn;
  for (const std::string& s : batch.symbols()) dyn[s] = 3;
  const int64_t n = int64_t(bags.size()) + 1;
  try {
    for (NodeId root = bags.back() + 1; root < g.size(); ++root) {
      const Node& r = g.node(root);
      const bool stacked = r.shape.size() == 3 && r.shape[1].as_const() == n && r.shape[2].as_const() == *d;
      const bool flat = r.shape.size() == 2 && r.shape[1].as_const() == n * *d;
      if (r.dtype != first.dtype || (!stacked && !flat) || !r.shape[0].same(batch)) continue;
      const auto f = match_at(ctx, root, bags, batch, *d, dyn);
      if (!f) continue;
      if (ctx.earlier == nullptr && !match_dlrm(ctx).empty()) return {};  // called on its own
      RuleMatch m{"bag_concat", fmt::format("x0 = [x, {} bags] x {}, {}", bags.size(), *d, dtype_name(first.dtype)), {}};
      const std::string refusal = ctx.backend == nullptr || !ctx.backend->has_kernel("bag_concat")
                                      ? "no bag_concat kernel on this backend"
                                      : "";
      const Found found = *f;
      // The op over the bags' inputs, with x (x0 whole) or without (the bags only).
      auto build = [&g, found, stacked](bool with_x, const std::function<GraphTensor(const GraphTensor&)>& map) {
        std::vector<GraphTensor> tables, indices, offsets;
        for (NodeId b : found.bags) {
          const Node& bn = g.node(b);
          tables.push_back(map(read(g, bn.inputs[0])));
          indices.push_back(map(read(g, bn.inputs[1])));
          offsets.push_back(map(read(g, bn.inputs[2])));
        }
        const GraphTensor x = map(GraphTensor(const_cast<Graph*>(&g), found.x));
        const custom::EmbeddingBag& op = *custom::unweighted_bag(g.node(found.bags[0]));
        if (with_x) return custom::bag_concat(x, tables, indices, offsets, op.mode(), stacked, {}, op.closed());
        // Stacked: [B, 1, d] beside [B, F, d] (the rebuilt node must have the target's shape).
        return concat({stacked ? x.expand_dim(1, 1) : x,
                       custom::bags_concat(tables, indices, offsets, op.mode(), x.dtype, stacked, {}, op.closed())},
                      1);
      };
      using Map = std::function<GraphTensor(const GraphTensor&)>;
      m.alternatives.push_back({"fused", refusal, {root, [build](Graph&, const Map& map) { return build(true, map); }}});
      // Split: the bags without x, then x0's concat: the bags kernel reads nothing of the bottom MLP,
      // so a plan captured over several streams (graph_branches) runs it beside the MLP. One more
      // kernel than fused, so it only pays with branches: search-only, the search times it.
      Alternative split{"split", refusal, {root, [build](Graph&, const Map& map) { return build(false, map); }}};
      split.search_only = true;
      m.alternatives.push_back(std::move(split));
      m.alternatives.push_back({"decomposed", "", {}});
      return {m};
    }
  } catch (const std::exception&) {
    // A region the reference cannot evaluate is simply not a concat of the bags.
  }
  return {};
}

}  // namespace luminal::compiler::rules
