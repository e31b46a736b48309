// The RMSNorm rule (shared/DESIGN.md section 9): weight * (x.float() * rsqrt(mean(x^2) + eps))
// .to(x.dtype), as nn::rms_norm builds it (and its plain fp32 form, no casts), offered as
// custom::RmsNorm (one kernel per norm on CUDA: a decode step had 2-3 launches per norm) or as the
// graph itself. Found by structure at its ends (the SumReduce of x * x over the last axis, the
// multiply of x by the broadcast per-row scale, the cast back, the weight multiply); the math in
// between (the mean, eps, sqrt and reciprocal, in whatever form) is checked by value with probe().
#include <cmath>
#include <memory>

#include <fmt/format.h>

#include "compiler/rules/rules.h"
#include "custom/rms_norm/op.h"

namespace luminal::compiler::rules {

namespace {

// One norm found in a graph.
struct NormMatch {
  NodeId root = 0;      // the weight multiply
  NodeInput x;          // the norm's input (before the cast to fp32)
  NodeId weight = 0;    // a [D] node
  Expr rows, d;         // rows: the product of the leading dims
  DType dtype = DType::F32;
  double eps = 0;
};

bool same_view(const ShapeTracker& a, const ShapeTracker& b) {
  return same_exprs(a.dims, b.dims) && same_exprs(a.strides, b.strides) &&
         same_exprs(a.pad_lo, b.pad_lo) && same_exprs(a.pad_hi, b.pad_hi) &&
         a.offset.same(b.offset);
}

bool same_input(const NodeInput& a, const NodeInput& b) {
  return a.node == b.node && same_view(a.view, b.view);
}

// Deterministic probe values in [-2, 2) (a 64-bit LCG).
std::vector<double> probe_values(size_t n, uint64_t seed) {
  std::vector<double> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (double& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<double>(s >> 11) / static_cast<double>(1ull << 53) * 4.0 - 2.0;
  }
  return v;
}

class Matcher {
 public:
  explicit Matcher(const RuleContext& ctx) : ctx_(ctx), g_(ctx.graph), users_(g_.size()) {
    for (NodeId id = 0; id < g_.size(); ++id)
      for (const NodeInput& in : g_.node(id).inputs) users_[in.node].push_back(id);
  }

  // The norm whose sum of squares is node s, or nullopt.
  std::optional<NormMatch> match(NodeId s) {
    const Node& sum = g_.node(s);
    if (sum.kind != OpKind::SumReduce || sum.inputs.size() != 1 ||
        !sum.inputs[0].view.is_contiguous())
      return std::nullopt;
    const Node& sq = g_.node(sum.inputs[0].node);
    if (sq.kind != OpKind::Mul || sq.dtype != DType::F32 || sq.inputs.size() != 2 ||
        sum.axis != int(sq.shape.size()) - 1 || !same_input(sq.inputs[0], sq.inputs[1]))
      return std::nullopt;
    const NodeInput X = sq.inputs[0];
    NormMatch m;
    m.d = sq.shape.back();
    if (!m.d.as_const()) return std::nullopt;  // probed per row of a known length
    std::optional<NodeId> y;
    for (NodeId u : scaled(X, sq.shape))
      if (check_math(X, u, s, m)) {
        y = u;
        break;
      }
    if (!y) return std::nullopt;
    // The 16-bit form: x.float() ... .to(x.dtype); the fp32 form has no casts.
    NodeId p = *y;
    m.x = X;
    const Node& xn = g_.node(X.node);
    if (xn.kind == OpKind::Cast && X.view.is_contiguous() &&
        (g_.node(xn.inputs[0].node).dtype == DType::BF16 ||
         g_.node(xn.inputs[0].node).dtype == DType::F16)) {
      m.x = xn.inputs[0];
      m.dtype = g_.node(m.x.node).dtype;
      std::optional<NodeId> c = user(p, [&](const Node& n) {
        return n.kind == OpKind::Cast && n.dtype == m.dtype && n.inputs[0].view.is_contiguous();
      });
      if (!c) return std::nullopt;
      p = *c;
    }
    if (!weighted(p, m)) return std::nullopt;
    m.rows = 1;
    for (size_t i = 0; i + 1 < sq.shape.size(); ++i) m.rows = m.rows * sq.shape[i];
    return m;
  }

 private:
  template <class Pred>
  std::optional<NodeId> user(NodeId id, Pred pred) const {
    for (NodeId u : users_[id])
      if (pred(g_.node(u))) return u;
    return std::nullopt;
  }

  // Candidates for y = X * r[..., None]: Muls reading X and a value broadcast along the last axis.
  std::vector<NodeId> scaled(const NodeInput& X, const std::vector<Expr>& shape) const {
    std::vector<NodeId> out;
    for (NodeId u : users_[X.node]) {
      const Node& n = g_.node(u);
      if (n.kind != OpKind::Mul || n.inputs.size() != 2 || !same_exprs(n.shape, shape)) continue;
      for (int o = 0; o < 2; ++o) {
        const ShapeTracker& r = n.inputs[1 - o].view;
        if (same_input(n.inputs[o], X) && !r.has_padding() && r.strides.back().as_const() == 0) {
          out.push_back(u);
          break;
        }
      }
    }
    return out;
  }

  // out = p * weight[None, ...]: weight a [D] node of p's dtype, broadcast over the rows.
  bool weighted(NodeId p, NormMatch& m) const {
    for (NodeId u : users_[p]) {
      const Node& n = g_.node(u);
      if (n.kind != OpKind::Mul || n.inputs.size() != 2 || n.dtype != m.dtype) continue;
      for (int o = 0; o < 2; ++o) {
        const NodeInput &a = n.inputs[o], &w = n.inputs[1 - o];
        const Node& wn = g_.node(w.node);
        if (a.node != p || !a.view.is_contiguous() || w.view.has_padding() ||
            wn.dtype != m.dtype || !same_exprs(wn.shape, {m.d}) || w.view.offset.as_const() != 0 ||
            w.view.strides.back().as_const() != 1)
          continue;
        bool broadcast = true;
        for (size_t i = 0; i + 1 < w.view.rank(); ++i) broadcast &= w.view.strides[i].as_const() == 0;
        if (!broadcast) continue;
        m.root = u, m.weight = w.node;
        return true;
      }
    }
    return false;
  }

  // r = 1 / sqrt(s / D + eps) by value, for the sum of squares s and the per-row scale r that y
  // reads broadcast along the last axis (row i of y reads r[i]: checked on the view). eps is read
  // off s = 0 (r = 1 / sqrt(eps)), then taken exactly from a Constant of that value if there is
  // one. Probing s -> r (elementwise over the rows) rather than X -> y keeps it cheap at any size.
  bool check_math(const NodeInput& X, NodeId y, NodeId s, NormMatch& m) {
    const Node& yn = g_.node(y);
    const NodeInput& rin = same_input(yn.inputs[0], X) ? yn.inputs[1] : yn.inputs[0];
    const Node& sum = g_.node(s);
    if (!same_exprs(g_.node(rin.node).shape, sum.shape) || rin.view.has_padding() ||
        rin.view.offset.as_const() != 0 || !same_exprs(rin.view.dims, yn.shape))
      return false;
    const ShapeTracker rows = ShapeTracker::contiguous(sum.shape);
    for (size_t i = 0; i < rows.rank(); ++i)
      if (!rin.view.strides[i].same(rows.strides[i])) return false;
    DynMap dyn;
    for (const Expr& e : sum.shape)
      for (const std::string& sym : e.symbols()) dyn[sym] = 3;
    const size_t n = size_t(product(sum.shape).eval(dyn));
    const double d = double(*m.d.as_const());
    auto zero = probe(g_, rin.node, {{s, std::vector<double>(n, 0.0)}}, ctx_.constants, dyn);
    if (!zero || zero->size() != n || !(zero->front() > 0)) return false;
    m.eps = std::isinf(zero->front()) ? 0.0 : 1.0 / (zero->front() * zero->front());
    snap_eps(rin.node, m);
    // Mean squares at the data's scale and at eps's (where 1 / (sqrt(ms) + eps) and other
    // look-alikes part from 1 / sqrt(ms + eps) by far more than the fp32 probe's rounding).
    for (double scale : {1.0, m.eps}) {
      if (scale == 0.0) continue;
      std::vector<double> sv = probe_values(n, 7);
      for (double& v : sv) v = (std::abs(v) + 0.05) * scale * d;
      auto got = probe(g_, rin.node, {{s, sv}}, ctx_.constants, dyn);
      if (!got || got->size() != n) return false;
      for (size_t i = 0; i < n; ++i) {
        const double want = 1.0 / std::sqrt(sv[i] / d + m.eps);
        if (!(std::abs((*got)[i] - want) <= 1e-5 * want)) return false;
      }
    }
    return true;
  }

  // The Constant between r and the sum whose value eps approximates (fp32 probes give ~7 digits).
  void snap_eps(NodeId r, NormMatch& m) const {
    std::vector<NodeId> work{r};
    std::vector<bool> seen(g_.size(), false);
    while (!work.empty()) {
      const NodeId id = work.back();
      work.pop_back();
      if (seen[id]) continue;
      seen[id] = true;
      const Node& n = g_.node(id);
      if (n.kind == OpKind::Constant && m.eps > 0 && std::abs(n.value - m.eps) <= 1e-4 * m.eps) {
        m.eps = n.value;
        return;
      }
      if (n.kind == OpKind::SumReduce || n.kind == OpKind::Input) continue;
      for (const NodeInput& in : n.inputs) work.push_back(in.node);
    }
  }

  const RuleContext& ctx_;
  const Graph& g_;
  std::vector<std::vector<NodeId>> users_;
};

Alternative fused(const Graph& g, const NormMatch& m) {
  Alternative a{"fused", custom::rms_norm_refusal(*m.d.as_const(), m.dtype), {}};
  if (!a.refusal.empty()) return a;
  a.replacement = {m.root, [&g, m](Graph&, const std::function<GraphTensor(const GraphTensor&)>& map) {
                     return custom_op(std::make_shared<custom::RmsNorm>(m.eps),
                                      {map(read(g, m.x)), map(GraphTensor(const_cast<Graph*>(&g), m.weight))});
                   }};
  return a;
}

}  // namespace

std::vector<RuleMatch> find_rms_norm(const RuleContext& ctx) {
  std::vector<RuleMatch> out;
  Matcher matcher(ctx);
  for (NodeId id = 0; id < ctx.graph.size(); ++id) {
    if (ctx.graph.node(id).kind != OpKind::SumReduce) continue;
    std::optional<NormMatch> m;
    try {
      m = matcher.match(id);
    } catch (const std::exception&) {
      // A region the reference cannot evaluate is simply not a norm.
    }
    if (!m) continue;
    RuleMatch r{"rms_norm",
                fmt::format("{} rows x {} {}, eps {:g}", m->rows.to_string(), m->d.to_string(),
                            dtype_name(m->dtype), m->eps),
                {}};
    r.alternatives.push_back(fused(ctx.graph, *m));
    r.alternatives.push_back({"decomposed", "", {}});
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace luminal::compiler::rules
