// Structure (matmuls, bags) plus probes (everything between them); see dlrm_match.h.
#include "compiler/rules/dlrm_match.h"

#include <cmath>
#include <cstdint>
#include <functional>

#include "custom/embedding_bag/op.h"

namespace luminal::compiler::rules {

namespace {

bool is(const Expr& e, int64_t v) { return e.as_const() == v; }

// The view reads all of a [rows, cols] buffer as [rows, N, cols] (stride 0 on N): a matmul's
// activation operand.
bool reads_activation(const Graph& g, const NodeInput& in) {
  const ShapeTracker& v = in.view;
  return v.rank() == 3 && !v.has_padding() && is(v.offset, 0) && is(v.strides[1], 0) &&
         is(v.strides[2], 1) && v.strides[0].same(v.dims[2]) &&
         same_exprs(g.node(in.node).shape, {v.dims[0], v.dims[2]});
}

// The view reads all of an [N, K] buffer (PyTorch's (out, in) weight) as [B, N, K] (stride 0 on B).
bool reads_weight(const Graph& g, const NodeInput& in) {
  const ShapeTracker& v = in.view;
  return v.rank() == 3 && !v.has_padding() && is(v.offset, 0) && is(v.strides[0], 0) &&
         is(v.strides[2], 1) && v.strides[1].same(v.dims[2]) &&
         same_exprs(g.node(in.node).shape, {v.dims[1], v.dims[2]});
}

bool f32_or_bf16(DType t) { return t == DType::F32 || t == DType::BF16; }

// sum = SumReduce(axis 2) of Mul(x view, w view) over [B, N, K], all f32 or all bf16 (bias not
// yet known).
std::optional<MatchedLinear> match_matmul(const Graph& g, NodeId sum) {
  const Node& s = g.node(sum);
  if (s.kind != OpKind::SumReduce || s.axis != 2 || s.inputs.size() != 1 || !f32_or_bf16(s.dtype) ||
      !s.inputs[0].view.is_contiguous())
    return std::nullopt;
  const Node& mul = g.node(s.inputs[0].node);
  if (mul.kind != OpKind::Mul || mul.inputs.size() != 2 || mul.shape.size() != 3) return std::nullopt;
  for (int o = 0; o < 2; ++o) {
    const NodeInput &x = mul.inputs[o], &w = mul.inputs[1 - o];
    if (reads_activation(g, x) && reads_weight(g, w) && g.node(x.node).dtype == s.dtype &&
        g.node(w.node).dtype == s.dtype)
      return MatchedLinear{sum, x.node, w.node, 0, mul.shape[0], mul.shape[1], mul.shape[2], s.dtype};
  }
  return std::nullopt;
}

// Deterministic probe values in [-2, 2) (a 64-bit LCG: no state shared between probes), exact in
// `dtype` (bf16 values keep 8 significant bits: the region's input rounding is then exact).
std::vector<double> probe_values(size_t n, uint64_t seed, DType dtype) {
  std::vector<double> v(n);
  uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
  for (double& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<double>(s >> 11) / static_cast<double>(1ull << 53) * 4.0 - 2.0;
    if (dtype == DType::BF16) x = std::ldexp(std::round(std::ldexp(x, 6)), -6);  // exact: |x| <= 2
  }
  return v;
}

// f32 regions agree to rounding; a bf16 region rounds every intermediate to 8 bits, so it is
// compared at 2% of the largest expected value (a wrong structure - a missing activation, other
// pairs - differs by O(1) of it).
bool close(const std::vector<double>& got, const std::vector<double>& want, DType dtype) {
  if (got.size() != want.size()) return false;
  double scale = 0;
  for (double w : want) scale = std::max(scale, std::abs(w));
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = dtype == DType::BF16 ? 2e-2 * (1.0 + scale) : 1e-5 * (1.0 + std::abs(want[i]));
    if (!(std::abs(got[i] - want[i]) <= tol)) return false;
  }
  return true;
}

enum class Act { Relu, Sigmoid, None };

double activate(Act a, double v) {
  if (a == Act::None) return v;
  return a == Act::Relu ? (v > 0 ? v : 0) : 1.0 / (1.0 + std::exp(-v));
}

// y [B, N] + b [N], then the activation.
std::vector<double> biased(const std::vector<double>& y, const std::vector<double>& b, Act a) {
  std::vector<double> out(y.size());
  for (size_t i = 0; i < y.size(); ++i) out[i] = activate(a, y[i] + b[i % b.size()]);
  return out;
}

// The DLRM dot interaction on host values: x [B, d], ly[k] [B, d] -> [B, d + n(n-1)/2], the
// pairs in `order`.
std::vector<double> interact(const std::vector<double>& x, const std::vector<std::vector<double>>& ly,
                             int64_t batch, int64_t d, nn::PairOrder order) {
  const int64_t n = 1 + static_cast<int64_t>(ly.size()), w = d + n * (n - 1) / 2;
  std::vector<double> out(static_cast<size_t>(batch * w));
  auto feat = [&](int64_t b, int64_t f, int64_t e) {
    return f == 0 ? x[size_t(b * d + e)] : ly[size_t(f - 1)][size_t(b * d + e)];
  };
  for (int64_t b = 0; b < batch; ++b) {
    double* o = out.data() + b * w;
    for (int64_t e = 0; e < d; ++e) o[e] = feat(b, 0, e);
    for (int64_t i = 1; i < n; ++i)
      for (int64_t j = 0; j < i; ++j) {
        double z = 0;
        for (int64_t e = 0; e < d; ++e) z += feat(b, i, e) * feat(b, j, e);
        o[d + nn::pair_column(order, n, i, j)] = z;
      }
  }
  return out;
}

class Matcher {
 public:
  Matcher(const RuleContext& ctx, DynMap dyn) : ctx_(ctx), g_(ctx.graph), dyn_(std::move(dyn)) {}

  std::optional<DlrmMatch> match(NodeId root) {
    DlrmMatch m;
    m.root = root;
    auto last = layer(root, Act::Sigmoid);
    if (!last) last = layer(root, Act::None), m.sigmoid = false;  // torchrec's DLRM: the logit
    if (!last || !is(last->out, 1)) return std::nullopt;
    std::vector<MatchedLinear> top{*last};
    NodeId cur = last->x;
    while (auto l = layer(cur, Act::Relu)) top.insert(top.begin(), *l), cur = l->x;
    m.interaction = cur;
    auto bottom_last = interaction(cur, m);
    if (!bottom_last) return std::nullopt;
    std::vector<MatchedLinear> bottom{*bottom_last};
    cur = bottom_last->x;
    // The bottom MLP's input: an Input, or a Cast of one (a bf16 program casts its f32 dense
    // input on entry). Anything else (another layer, e.g. a Tanh where DLRM has a ReLU) is not
    // a DLRM.
    while (g_.node(cur).kind != OpKind::Input && !is_cast_of_input(cur)) {
      auto l = layer(cur, Act::Relu);
      if (!l) return std::nullopt;
      bottom.insert(bottom.begin(), *l), cur = l->x;
    }
    if (known(cur)) return std::nullopt;
    m.dense_x = cur;
    m.bottom = bottom, m.top = top;
    m.batch = bottom.front().batch;
    m.dtype = bottom.front().dtype;
    for (const auto* mlp : {&m.bottom, &m.top})
      for (const MatchedLinear& l : *mlp)
        if (!l.batch.same(m.batch) || l.dtype != m.dtype) return std::nullopt;
    return m;
  }

 private:
  bool known(NodeId id) const {
    return g_.node(id).kind == OpKind::Input && ctx_.constants && ctx_.constants(id).has_value();
  }

  std::optional<MatchedLinear> linear_at(NodeId id) {
    if (id >= linear_.size()) linear_.resize(g_.size());
    if (!linear_[id]) linear_[id] = match_matmul(g_, id);
    return *linear_[id];
  }

  bool is_cast_of_input(NodeId id) const {
    const Node& n = g_.node(id);
    return n.kind == OpKind::Cast && n.inputs.size() == 1 && g_.node(n.inputs[0].node).kind == OpKind::Input &&
           !known(n.inputs[0].node);
  }

  // Leaves of root's region (matmuls, custom ops and unknown Inputs), constants excluded.
  std::vector<NodeId> leaves(NodeId root) {
    std::vector<NodeId> out;
    auto stop = [&](NodeId id) { return g_.node(id).kind == OpKind::Custom || linear_at(id).has_value(); };
    for (NodeId id : region_leaves(g_, root, stop))
      if (!known(id)) out.push_back(id);
    return out;
  }

  int64_t eval(const Expr& e) const { return e.eval(dyn_); }

  // Splits leaves into one matmul and its bias [N]; the rest (bags) in `others`.
  std::optional<MatchedLinear> matmul_and_bias(const std::vector<NodeId>& ls, std::vector<NodeId>& others) {
    std::optional<MatchedLinear> mm;
    for (NodeId id : ls) {
      if (auto l = linear_at(id); l && !mm) mm = l;
      else others.push_back(id);
    }
    if (!mm) return std::nullopt;
    for (auto it = others.begin(); it != others.end(); ++it) {
      const Node& b = g_.node(*it);
      if (b.kind == OpKind::Input && b.dtype == mm->dtype && same_exprs(b.shape, {mm->out})) {
        mm->bias = *it;
        others.erase(it);
        return mm;
      }
    }
    return std::nullopt;
  }

  // test(batch, substitution) at a small batch first when the graph's batch is concrete (a
  // probe at 2048 costs seconds on the reference: the interaction's broadcast product alone is
  // B x n x n x d), then at the batch itself when the small copy cannot decide.
  template <class Test>
  bool probed(const Expr& batch, Test test) {
    constexpr int64_t kSmall = 3;
    if (auto b = batch.as_const(); b && *b > kSmall && test(kSmall, ProbeBatch{*b, kSmall})) return true;
    return test(eval(batch), std::nullopt);
  }

  // root = act(linear + bias) as a region of one matmul and one bias.
  std::optional<MatchedLinear> layer(NodeId root, Act act) {
    std::vector<NodeId> others;
    auto mm = matmul_and_bias(leaves(root), others);
    if (!mm || !others.empty()) return std::nullopt;
    const bool ok = probed(mm->batch, [&](int64_t batch, std::optional<ProbeBatch> pb) {
      const std::vector<double> y = probe_values(size_t(batch * eval(mm->out)), 1, mm->dtype);
      const std::vector<double> b = probe_values(size_t(eval(mm->out)), 2, mm->dtype);
      auto got = probe(g_, root, {{mm->sum, y}, {mm->bias, b}}, ctx_.constants, dyn_, pb);
      return got && close(*got, biased(y, b, act), mm->dtype);
    });
    return ok ? mm : std::nullopt;
  }

  // root = dot_interaction(relu(linear + bias), bags): returns the bottom MLP's last layer.
  std::optional<MatchedLinear> interaction(NodeId root, DlrmMatch& m) {
    std::vector<NodeId> bags;
    auto mm = matmul_and_bias(leaves(root), bags);
    if (!mm || bags.empty()) return std::nullopt;
    for (NodeId id : bags) {
      const Node& bag = g_.node(id);
      const custom::EmbeddingBag* op = custom::unweighted_bag(bag);
      if (op == nullptr) return std::nullopt;  // the fused kernels take unweighted bags
      if (bag.dtype != mm->dtype || !same_exprs(bag.shape, {mm->batch, mm->out})) return std::nullopt;
      if (id != bags.front() && op->mode() != m.mode) m.mixed_modes = true;
      if (id != bags.front() && op->closed() != m.closed) m.mixed_offsets = true;
      m.mode = op->mode();
      m.closed = op->closed();
    }
    const int64_t d = eval(mm->out);
    // facebookresearch/dlrm's pair order, else torchrec's.
    for (nn::PairOrder order : {nn::PairOrder::Lower, nn::PairOrder::Upper})
      if (interacts(root, *mm, bags, d, order)) {
        m.pairs = order;
        m.bags = bags;
        return mm;
      }
    return std::nullopt;
  }

  // Whether root = dot_interaction(relu(mm + bias), bags) with the pairs in `order`, by probing.
  bool interacts(NodeId root, const MatchedLinear& mm, const std::vector<NodeId>& bags, int64_t d,
                 nn::PairOrder order) {
    return probed(mm.batch, [&](int64_t batch, std::optional<ProbeBatch> pb) {
      const size_t n = size_t(batch * d);
      const std::vector<double> y = probe_values(n, 3, mm.dtype);
      const std::vector<double> b = probe_values(size_t(d), 4, mm.dtype);
      std::vector<ProbeLeaf> in{{mm.sum, y}, {mm.bias, b}};
      std::vector<std::vector<double>> ly;
      for (size_t k = 0; k < bags.size(); ++k) {
        ly.push_back(probe_values(n, 5 + k, mm.dtype));
        in.push_back({bags[k], ly.back()});
      }
      auto got = probe(g_, root, in, ctx_.constants, dyn_, pb);
      return got && close(*got, interact(biased(y, b, Act::Relu), ly, batch, d, order), mm.dtype);
    });
  }

  const RuleContext& ctx_;
  const Graph& g_;
  DynMap dyn_;
  std::vector<std::optional<std::optional<MatchedLinear>>> linear_;
};

}  // namespace

std::vector<DlrmMatch> match_dlrm(const RuleContext& ctx) {
  const Graph& g = ctx.graph;
  std::vector<DlrmMatch> out;
  for (NodeId o : g.outputs()) {
    const Node& on = g.node(o);
    if (on.inputs.size() != 1 || !on.inputs[0].view.is_contiguous() || on.shape.size() != 2 ||
        !is(on.shape[1], 1) || !f32_or_bf16(on.dtype))
      continue;
    // Symbolic dims are probed at a small value (the regions are elementwise or per sample).
    DynMap dyn;
    for (const std::string& s : on.shape[0].symbols()) dyn[s] = 3;
    Matcher m(ctx, dyn);
    try {
      if (auto found = m.match(on.inputs[0].node)) out.push_back(std::move(*found));
    } catch (const std::exception&) {
      // A region the reference cannot evaluate (e.g. another symbol) is simply not a DLRM.
    }
  }
  return out;
}

}  // namespace luminal::compiler::rules
