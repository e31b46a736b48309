// Structural matchers of dense layers (linear_match.h).
#include "compiler/rules/linear_match.h"

namespace luminal::compiler::rules {

namespace {

bool is_const(const Expr& e, int64_t v) { return e.as_const() == v; }

// The only user of id, if it has exactly one.
std::optional<NodeId> sole_user(const Users& users, NodeId id) {
  if (users[id].size() != 1) return std::nullopt;
  return users[id][0];
}

// Binary node `op` reads `from` whole as [M, n] on one side: the other side's index.
std::optional<int> other_input(const Graph& g, NodeId op, NodeId from, const std::vector<Expr>& mn) {
  const Node& n = g.node(op);
  if (n.inputs.size() != 2 || n.shape.size() != 2 || !n.shape[0].same(mn[0]) || !n.shape[1].same(mn[1]))
    return std::nullopt;
  for (int s = 0; s < 2; ++s)
    if (n.inputs[s].node == from && n.inputs[1 - s].node != from && reads_whole(g, n.inputs[s], mn)) return 1 - s;
  return std::nullopt;
}

// other_input's side when it too reads its producer whole as [M, n] (x0, x_l), as a tensor.
std::optional<GraphTensor> whole_operand(const Graph& g, NodeId op, NodeId from, const std::vector<Expr>& mn) {
  const auto s = other_input(g, op, from, mn);
  if (!s || !reads_whole(g, g.node(op).inputs[*s], mn)) return std::nullopt;
  return read(g, g.node(op).inputs[*s]);
}

}  // namespace

Users users_of(const Graph& g) {
  Users users(g.size());
  for (NodeId id = 0; id < g.size(); ++id)
    for (const NodeInput& in : g.node(id).inputs) users[in.node].push_back(id);
  return users;
}

std::optional<MatmulFound> match_matmul_2d(const Graph& g, const Users& users, NodeId sum) {
  const Node& s = g.node(sum);
  if (s.kind != OpKind::SumReduce || s.inputs.size() != 1 || s.axis != 2 || s.shape.size() != 2) return std::nullopt;
  const std::vector<Expr>& mn = s.shape;
  const NodeInput& sin = s.inputs[0];
  const Node& mul = g.node(sin.node);
  const Expr k = sin.view.dims.size() == 3 ? sin.view.dims[2] : Expr(0);
  if (mul.kind != OpKind::Mul || mul.inputs.size() != 2 || sole_user(users, sin.node) != sum || !k.as_const() ||
      !mn[1].as_const() || !reads_whole(g, sin, {mn[0], mn[1], k}) || mul.dtype != s.dtype)
    return std::nullopt;
  // x reads [M, n, k] with stride 0 along n, W^T with stride 0 along M.
  for (int o = 0; o < 2; ++o) {
    const ShapeTracker &a = mul.inputs[o].view, &b = mul.inputs[1 - o].view;
    if (a.rank() != 3 || b.rank() != 3 || a.has_padding() || b.has_padding() || !is_const(a.strides[1], 0) ||
        !is_const(b.strides[0], 0) || is_const(a.strides[0], 0) || is_const(b.strides[1], 0))
      continue;
    MatmulFound f{sum, without_dim(g, mul.inputs[o], 1), without_dim(g, mul.inputs[1 - o], 0), {}, *mn[1].as_const(),
                  *k.as_const()};
    const NodeInput& xin = mul.inputs[o];
    if (is_const(a.offset, 0) && is_const(a.strides[2], 1) && a.strides[0].same(k) &&
        product(g.node(xin.node).shape).same(mn[0] * k))
      f.x_node = xin.node;
    return f;
  }
  return std::nullopt;
}

std::optional<std::pair<NodeId, GraphTensor>> match_bias(const Graph& g, const Users& users, NodeId top) {
  const auto add = sole_user(users, top);
  if (!add || g.node(*add).kind != OpKind::Add) return std::nullopt;
  const std::vector<Expr>& mn = g.node(top).shape;
  const auto other = other_input(g, *add, top, mn);
  if (!other) return std::nullopt;
  const NodeInput& bias = g.node(*add).inputs[*other];
  const ShapeTracker& v = bias.view;
  if (v.rank() != 2 || !is_const(v.strides[0], 0) || !is_const(v.strides[1], 1) || v.has_padding() ||
      !is_const(v.offset, 0) || !product(g.node(bias.node).shape).same(mn[1]))
    return std::nullopt;
  return std::make_pair(*add, without_dim(g, bias, 0));
}

std::optional<NodeId> match_relu(const Graph& g, const Users& users, NodeId top) {
  if (users[top].size() != 2) return std::nullopt;
  std::optional<NodeId> mul, lt;
  for (NodeId u : users[top]) {
    if (g.node(u).kind == OpKind::Mul) mul = u;
    if (g.node(u).kind == OpKind::LessThan) lt = u;
  }
  if (!mul || !lt) return std::nullopt;
  const Node& l = g.node(*lt);
  const Node& zero = g.node(l.inputs[0].node);
  const std::vector<Expr>& shape = g.node(top).shape;
  if (zero.kind != OpKind::Constant || zero.value != 0.0 || l.inputs[1].node != top ||
      !reads_whole(g, l.inputs[1], shape) || users[*lt].size() != 1)
    return std::nullopt;
  const NodeId cast = users[*lt][0];
  const Node& c = g.node(cast);
  if (c.kind != OpKind::Cast || c.dtype != g.node(top).dtype || sole_user(users, cast) != *mul ||
      !reads_whole(g, c.inputs[0], shape))
    return std::nullopt;
  const Node& m = g.node(*mul);
  for (int s = 0; s < 2; ++s)
    if (m.inputs[s].node == top && m.inputs[1 - s].node == cast && reads_whole(g, m.inputs[s], shape) &&
        reads_whole(g, m.inputs[1 - s], shape))
      return mul;
  return std::nullopt;
}

std::optional<CrossFound> match_cross(const Graph& g, const Users& users, NodeId sum) {
  const auto mm = match_matmul_2d(g, users, sum);
  if (!mm) return std::nullopt;
  const DType dt = g.node(sum).dtype;
  const std::vector<Expr>& mn = g.node(sum).shape;
  const auto bias = match_bias(g, users, sum);
  if (!bias) return std::nullopt;
  CrossFound f{0, mm->x, mm->w, bias->second, {}, {}, mm->x_node};
  // * x0, then + x_l: both read whole as [M, n].
  const auto scale = sole_user(users, bias->first);
  if (!scale || g.node(*scale).kind != OpKind::Mul) return std::nullopt;
  const auto x0 = whole_operand(g, *scale, bias->first, mn);
  if (!x0) return std::nullopt;
  f.x0 = *x0;
  const auto root = sole_user(users, *scale);
  if (!root || g.node(*root).kind != OpKind::Add) return std::nullopt;
  const auto xl = whole_operand(g, *root, *scale, mn);
  if (!xl) return std::nullopt;
  f.xl = *xl;
  for (NodeId id : {bias->first, *scale, *root})
    if (g.node(id).dtype != dt) return std::nullopt;
  for (const GraphTensor* t : {&f.u, &f.w, &f.b, &f.x0, &f.xl})
    if (t->dtype != dt) return std::nullopt;
  f.root = *root;
  return f;
}

}  // namespace luminal::compiler::rules
