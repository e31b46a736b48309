// The attention rule (shared/DESIGN.md section 9): the region nn::causal_attention builds (scores
// matmul, scale, position mask, softmax, probabilities @ v, the copy back to [s, H, d]) is offered
// as custom::CausalAttention (one kernel that reads only each query's visible keys) or as the graph
// itself. Found by structure (the two matmul-shaped reductions and the copy), checked by value: the
// whole region is probed on the reference runtime against a host attention, so the mask, scale,
// softmax and head grouping are what they must be whatever built them.
#include <cmath>
#include <memory>
#include <random>

#include <fmt/format.h>

#include "compiler/rules/rules.h"
#include "custom/attention/op.h"

namespace luminal::compiler::rules {

namespace {

// A matmul's reduction: SumReduce over the last axis of a rank-4 Mul (batched [B, M, N, K]).
bool is_matmul_sum(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  return n.kind == OpKind::SumReduce && n.axis == 3 && n.inputs.size() == 1 &&
         g.node(n.inputs[0].node).kind == OpKind::Mul && g.node(n.inputs[0].node).shape.size() == 4;
}

bool is_copy(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  return n.kind == OpKind::Cast && n.inputs.size() == 1 &&
         g.node(n.inputs[0].node).dtype == n.dtype;
}

// The region's pieces: O = copy of (P @ V); P's leaves are the scores matmul and q_pos.
struct AttentionMatch {
  NodeId out = 0, q = 0, k = 0, v = 0, pos = 0;
  int64_t heads = 0, kv_heads = 0, dim = 0;
  double scale = 0;
};

// The scale: a Constant multiplying the scores (or their f32 cast).
std::optional<double> scale_of(const Graph& g, NodeId qk, NodeId p) {
  for (NodeId id = qk + 1; id < p; ++id) {
    const Node& n = g.node(id);
    if (n.kind != OpKind::Mul || n.inputs.size() != 2) continue;
    for (int o = 0; o < 2; ++o) {
      const NodeId a = n.inputs[o].node, c = n.inputs[1 - o].node;
      const bool scores =
          a == qk || (g.node(a).kind == OpKind::Cast && g.node(a).inputs[0].node == qk);
      if (scores && g.node(c).kind == OpKind::Constant) return g.node(c).value;
    }
  }
  return std::nullopt;
}

std::optional<AttentionMatch> structure(const Graph& g, NodeId out) {
  const Node& o = g.node(out);
  // The copy back from [KV, g*s, d]: node shape [s, KV, g, d] (viewed as [s, H, d] by readers).
  if (!is_copy(g, out) || o.shape.size() != 4 || !is_matmul_sum(g, o.inputs[0].node))
    return std::nullopt;
  const Node& mul = g.node(g.node(o.inputs[0].node).inputs[0].node);  // P * V
  for (int side = 0; side < 2; ++side) {
    const NodeId v = mul.inputs[side].node, p = mul.inputs[1 - side].node;
    const auto &vs = g.node(v).shape, &ps = g.node(p).shape;
    if (vs.size() != 3 || ps.size() != 3 || !ps[2].same(vs[0]) || !ps[0].same(vs[1])) continue;
    NodeId qk = 0, pos = 0;
    int matmuls = 0, others = 0;
    for (NodeId id : region_leaves(g, p, [&](NodeId i) { return is_matmul_sum(g, i); })) {
      if (is_matmul_sum(g, id))
        qk = id, ++matmuls;
      else
        pos = id, ++others;
    }
    if (matmuls != 1 || others != 1 || g.node(pos).shape.size() != 1 ||
        (g.node(pos).dtype != DType::I32 && g.node(pos).dtype != DType::I64))
      continue;
    const Node& qmul = g.node(g.node(qk).inputs[0].node);
    for (int kside = 0; kside < 2; ++kside) {
      const NodeId k = qmul.inputs[kside].node, qc = qmul.inputs[1 - kside].node;
      if (!same_exprs(g.node(k).shape, vs) || g.node(k).dtype != g.node(v).dtype) continue;
      const auto scale = scale_of(g, qk, p);
      const auto kv = o.shape[1].as_const(), grp = o.shape[2].as_const(), d = o.shape[3].as_const();
      if (!scale || !kv || !grp || !d || !vs[1].same(o.shape[1]) || !vs[2].same(o.shape[3]))
        continue;
      const int64_t h = *kv * *grp;
      const NodeId q = is_copy(g, qc) ? g.node(qc).inputs[0].node : qc;
      return AttentionMatch{out, q, k, v, pos, h, *kv, *d, *scale};
    }
  }
  return std::nullopt;
}

// Host attention on probe values (row-major q [s, H, d], k / v [t, KV, d]).
std::vector<double> attend(const AttentionMatch& m, int64_t s, int64_t t,
                           const std::vector<double>& q, const std::vector<double>& k,
                           const std::vector<double>& v, const std::vector<double>& pos) {
  const int64_t H = m.heads, KV = m.kv_heads, d = m.dim, g = H / KV;
  std::vector<double> out(size_t(s * H * d), 0.0);
  for (int64_t i = 0; i < s; ++i)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t kv = h / g, n = int64_t(pos[size_t(i)]) + 1;
      std::vector<double> w(static_cast<size_t>(n));
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < d; ++e)
          dot += q[size_t((i * H + h) * d + e)] * k[size_t((j * KV + kv) * d + e)];
        mx = std::max(mx, w[size_t(j)] = dot * m.scale);
      }
      for (double& x : w) sum += (x = std::exp(x - mx));
      for (int64_t j = 0; j < n; ++j)
        for (int64_t e = 0; e < d; ++e)
          out[size_t((i * H + h) * d + e)] += w[size_t(j)] / sum * v[size_t((j * KV + kv) * d + e)];
    }
  return out;
}

// Probes the region at s = 3 (symbols set to 3) with values exact in bf16 (k / 64, |k| <= 64).
bool checks_out(const RuleContext& ctx, const AttentionMatch& m) {
  const Graph& g = ctx.graph;
  DynMap dyn;
  for (const Expr& e : {g.node(m.out).shape[0], g.node(m.v).shape[0]})
    for (const std::string& sym : e.symbols()) dyn[sym] = 3;
  const int64_t s = g.node(m.out).shape[0].eval(dyn), t = g.node(m.v).shape[0].eval(dyn);
  if (product(g.node(m.q).shape).eval(dyn) != s * m.heads * m.dim || m.heads % m.kv_heads)
    return false;
  std::mt19937 rng(7);
  auto vals = [&](int64_t n) {
    std::vector<double> r(static_cast<size_t>(n));
    for (double& x : r) x = double(int(rng() % 129) - 64) / 64.0;
    return r;
  };
  const std::vector<double> q = vals(s * m.heads * m.dim), k = vals(t * m.kv_heads * m.dim),
                            v = vals(t * m.kv_heads * m.dim);
  std::vector<double> pos(static_cast<size_t>(s));
  for (size_t i = 0; i < pos.size(); ++i) pos[i] = double(rng() % uint64_t(t));
  pos[0] = 0;  // one query that sees a single key; the others see random prefixes
  const auto got =
      probe(g, m.out, {{m.q, q}, {m.k, k}, {m.v, v}, {m.pos, pos}}, ctx.constants, dyn);
  if (!got) return false;
  const std::vector<double> want = attend(m, s, t, q, k, v, pos);
  const double tol = g.node(m.out).dtype == DType::F32 ? 1e-4 : 3e-2;
  if (got->size() != want.size()) return false;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::abs((*got)[i] - want[i]) <= tol * (1 + std::abs(want[i])))) return false;
  return true;
}

GraphTensor whole(const Graph& g, NodeId id) { return GraphTensor(const_cast<Graph*>(&g), id); }

Alternative fused(const RuleContext& ctx, const AttentionMatch& m) {
  const Graph& g = ctx.graph;
  Alternative a{"fused", "", {}};
  const custom::AttentionShape shape{m.heads, m.kv_heads, m.dim, g.node(m.out).dtype,
                                     g.node(m.pos).dtype};
  a.refusal = custom::why_unsupported(shape);
  const std::string op = custom::CausalAttention(m.scale, true).name();
  if (a.refusal.empty() && (ctx.backend == nullptr || !ctx.backend->has_kernel(op)))
    a.refusal = fmt::format("no attention kernel on the {} backend",
                            ctx.backend != nullptr ? ctx.backend->kind() : "(none)");
  if (!a.refusal.empty()) return a;
  a.replacement = {
      m.out, [&g, m](Graph&, const std::function<GraphTensor(const GraphTensor&)>& map) {
        const std::vector<Expr> qs{g.node(m.out).shape[0], m.heads, m.dim};
        GraphTensor q = map(whole(g, m.q));
        if (!same_exprs(q.dims(), qs)) q = q.reshape(qs);  // a free view: q is whole
        return custom_op(std::make_shared<custom::CausalAttention>(m.scale, true),
                         {q, map(whole(g, m.k)), map(whole(g, m.v)), map(whole(g, m.pos))});
      }};
  return a;
}

}  // namespace

std::vector<RuleMatch> find_attention(const RuleContext& ctx) {
  std::vector<RuleMatch> out;
  for (NodeId id = 0; id < ctx.graph.size(); ++id) {
    std::optional<AttentionMatch> m;
    try {
      m = structure(ctx.graph, id);
      if (m && !checks_out(ctx, *m)) m.reset();
    } catch (const std::exception&) {
      m.reset();  // a region the reference cannot evaluate is not an attention
    }
    if (!m) continue;
    RuleMatch r{"attention",
                fmt::format("H {}, KV {}, d {}, {}", m->heads, m->kv_heads, m->dim,
                            dtype_name(ctx.graph.node(id).dtype)),
                {}};
    r.alternatives.push_back(fused(ctx, *m));
    r.alternatives.push_back({"decomposed", "", {}});
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace luminal::compiler::rules
