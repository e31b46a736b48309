// graph_hash: every structural field of every node, length-prefixed into one FNV-1a stream.
#include "compiler/search/graph_hash.h"

#include <fmt/format.h>

#include <bit>
#include <string>
#include <string_view>

#include "compiler/search/candidate.h"
#include "luminal/custom_op.h"
#include "luminal/tensor.h"

namespace luminal::compiler::search {

namespace {

// Decompositions that themselves hold Custom nodes are hashed to this depth, then by name only
// (a guard against an op whose decomposition contains itself).
constexpr int kMaxCustomDepth = 4;

// Feeds fields into FNV-1a; each is length-prefixed so adjacent fields cannot trade bytes.
struct Hasher {
  uint64_t h = fnv1a64("luminal-graph v1");
  void add(std::string_view s) {
    h = fnv1a64(fmt::format("{}:", s.size()), h);
    h = fnv1a64(s, h);
  }
  void add(int64_t v) { add(std::string_view(fmt::format("{}", v))); }
  void add(const Expr& e) { add(std::string_view(e.to_string())); }
  void add(const std::vector<Expr>& es) {
    add(int64_t(es.size()));
    for (const Expr& e : es) add(e);
  }
};

uint64_t hash_graph(const Graph& g, int depth);

// The op's decomposition over fresh inputs of this node's input dims and dtypes, hashed.
uint64_t custom_hash(const Graph& g, const Node& n, int depth) {
  if (depth >= kMaxCustomDepth) return fnv1a64("too deep");
  try {
    Graph sub;
    std::vector<GraphTensor> ins;
    for (size_t i = 0; i < n.inputs.size(); ++i)
      ins.push_back(sub.named_tensor(fmt::format("in{}", i), n.inputs[i].view.dims,
                                     g.node(n.inputs[i].node).dtype));
    n.custom->decompose(sub, ins).output();
    return hash_graph(sub, depth + 1);
  } catch (const std::exception&) {
    return fnv1a64("no decomposition");  // the node could not have been built; name() still counts
  }
}

uint64_t hash_graph(const Graph& g, int depth) {
  Hasher hs;
  hs.add(int64_t(g.size()));
  for (const Node& n : g.nodes()) {
    hs.add(op_name(n.kind));
    hs.add(dtype_name(n.dtype));
    hs.add(n.shape);
    hs.add(n.name);
    hs.add(int64_t(std::bit_cast<uint64_t>(n.value)));
    hs.add(int64_t(n.axis));
    hs.add(int64_t(n.persist));
    hs.add(int64_t(n.inputs.size()));
    for (const NodeInput& in : n.inputs) {
      hs.add(int64_t(in.node));
      hs.add(in.view.dims);
      hs.add(in.view.strides);
      hs.add(in.view.pad_lo);
      hs.add(in.view.pad_hi);
      hs.add(in.view.offset);
    }
    if (n.kind == OpKind::Custom) {
      hs.add(n.custom ? n.custom->name() : std::string("null"));
      if (n.custom) hs.add(int64_t(custom_hash(g, n, depth)));
    }
  }
  return hs.h;
}

}  // namespace

uint64_t graph_hash(const Graph& g) { return hash_graph(g, 0); }

}  // namespace luminal::compiler::search
