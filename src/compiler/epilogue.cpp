// Reduction epilogues: an Output or materialized elementwise node whose inlined expression reads
// exactly one reduction, element for element (sigmoid(sum + bias) at the end of a model, the ReLU
// of a small generated Linear), is computed by the reduction kernel itself after its reduce,
// saving a kernel and the reduction's buffer.
#include <functional>
#include <map>
#include <set>

#include "compiler/lower_internal.h"

namespace luminal::compiler::detail {

namespace {

// True when a read through `in` sees the producer at the consumer's own index.
bool identity_read(const Graph& g, const NodeInput& in) {
  const std::vector<Expr>& shape = g.node(in.node).shape;
  if (!in.view.is_contiguous() || in.view.rank() != shape.size()) return false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (!in.view.dims[d].same(shape[d])) return false;
  }
  return true;
}

struct Walk {
  const Graph& g;
  const std::vector<Role>& roles;
  std::set<NodeId> identity;   // inlined nodes evaluated at the Output's index
  std::set<NodeId> shifted;    // inlined nodes evaluated at some other index
  std::set<NodeId> reductions; // reductions read at the Output's index
  std::set<NodeId> buffers;    // other nodes with buffers the expression reads
  bool ok = true;

  // Visits node id, evaluated at the Output's own index when `same` is true.
  void visit(NodeId id, bool same) {
    if (!ok || !(same ? identity : shifted).insert(id).second) return;
    const Node& n = g.node(id);
    const bool index_changes = n.kind == OpKind::Gather || n.kind == OpKind::SumReduce || n.kind == OpKind::MaxReduce;
    for (const NodeInput& in : n.inputs) {
      const bool child_same = same && !index_changes && identity_read(g, in);
      const Role r = roles[in.node];
      if (r == Role::Kernel && (g.node(in.node).kind == OpKind::SumReduce || g.node(in.node).kind == OpKind::MaxReduce)) {
        if (!child_same) ok = false;  // the reduction's value is only available at this index
        reductions.insert(in.node);
      } else if (r == Role::Inline) {
        visit(in.node, child_same);
      } else {
        buffers.insert(in.node);
      }
    }
  }
};

}  // namespace

std::optional<NodeId> reduction_epilogue_of(const Graph& g, NodeId output, const Users& users,
                                            const std::vector<Role>& roles) {
  const Node& o = g.node(output);
  Walk w{g, roles, {}, {}, {}};
  if (o.kind == OpKind::Output) {
    if (o.inputs.size() != 1) return std::nullopt;
    w.identity.insert(output);
    const NodeInput& in = o.inputs[0];
    if (roles[in.node] != Role::Inline) return std::nullopt;  // plain copies are handled by aliasing
    w.visit(in.node, identity_read(g, in));
  } else {
    // A materialized elementwise root: its own expression, evaluated at its index.
    const bool elementwise = o.kind != OpKind::SumReduce && o.kind != OpKind::MaxReduce &&
                             o.kind != OpKind::Scatter && o.kind != OpKind::Gather &&
                             o.kind != OpKind::Input && o.kind != OpKind::Custom;
    if (roles[output] != Role::Kernel || !elementwise) return std::nullopt;
    w.visit(output, true);
  }
  if (!w.ok || w.reductions.size() != 1) return std::nullopt;
  const NodeId r = *w.reductions.begin();
  // The reduction's kernel runs at its place in node order: a buffer written by a later step (a
  // custom op's result, say) would be read before it exists.
  for (NodeId b : w.buffers)
    if (b > r) return std::nullopt;
  const Node& rn = g.node(r);
  if (rn.shape.size() != o.shape.size()) return std::nullopt;
  for (size_t d = 0; d < o.shape.size(); ++d) {
    if (!rn.shape[d].same(o.shape[d])) return std::nullopt;
  }
  // Nobody else may need the reduction's buffer: every inlined node that depends on it must be
  // evaluated only here, at the Output's index (otherwise another kernel would inline it too).
  std::map<NodeId, bool> memo;
  std::function<bool(NodeId)> depends = [&](NodeId x) {
    if (auto it = memo.find(x); it != memo.end()) return it->second;
    bool d = false;
    for (const NodeInput& i : g.node(x).inputs) d = d || i.node == r || (roles[i.node] == Role::Inline && depends(i.node));
    return memo[x] = d;
  };
  for (NodeId u : users[r]) {
    if (!w.identity.count(u)) return std::nullopt;
  }
  for (const std::set<NodeId>* set : {&w.identity, &w.shifted}) {
    for (NodeId x : *set) {
      if (x == output || !depends(x)) continue;
      if (w.shifted.count(x)) return std::nullopt;
      for (NodeId u : users[x]) {
        if (!w.identity.count(u)) return std::nullopt;
      }
    }
  }
  return r;
}

}  // namespace luminal::compiler::detail
