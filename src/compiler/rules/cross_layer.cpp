// The cross_layer rule: a DCNv2 cross layer's second GEMM with its epilogue,
//   x_{l+1} = x0 * (u W^T + b) + x_l      (torchrec LowRankCrossNet, nn::low_rank_cross)
// offered as custom::CrossGemm, one kernel that never writes u W^T + b (CUDA: a tensor-core GEMM
// with the epilogue; CPU: a oneDNN matmul with binary post-ops), instead of the GEMM library's
// kernel and an elementwise kernel reading its [B, n] result back. Found by structure:
// the canonical matmul (SumReduce over k of Mul(u[M, 1, k], W^T[1, n, k])), then + b[n], * x0,
// + x_l, each the only user of the one before; x0 and x_l read whole. The search times the kernel
// against the decomposition.
#include <fmt/format.h>

#include "compiler/rules/rules.h"
#include "custom/cross_gemm/op.h"

namespace luminal::compiler::rules {

namespace {

bool is_const(const Expr& e, int64_t v) { return e.as_const() == v; }

// One cross layer's operands as old-graph tensors, and the node it replaces.
struct Found {
  NodeId root;
  GraphTensor u, w, b, x0, xl;
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), users_(g.size()) {
    for (NodeId id = 0; id < g.size(); ++id)
      for (const NodeInput& in : g.node(id).inputs) users_[in.node].push_back(id);
  }

  // A cross layer whose matmul is SumReduce `sum`, or nullopt.
  std::optional<Found> at(NodeId sum) const {
    const Node& s = g_.node(sum);
    if (s.kind != OpKind::SumReduce || s.inputs.size() != 1 || s.axis != 2 || s.shape.size() != 2) return std::nullopt;
    const DType dt = s.dtype;
    const std::vector<Expr> mn = s.shape;  // [M, n]
    const NodeInput& sin = s.inputs[0];
    const Node& mul = g_.node(sin.node);
    if (mul.kind != OpKind::Mul || mul.inputs.size() != 2 || !sole_user(sin.node, sum) ||
        !reads_whole(g_, sin, {mn[0], mn[1], sin.view.dims[2]}))
      return std::nullopt;
    const Expr k = sin.view.dims[2];
    if (!k.as_const() || !mn[1].as_const()) return std::nullopt;
    // u reads [M, n, k] with stride 0 along n, W^T with stride 0 along M.
    int ua = -1;
    for (int o = 0; o < 2 && ua < 0; ++o) {
      const ShapeTracker &a = mul.inputs[o].view, &b = mul.inputs[1 - o].view;
      if (a.rank() == 3 && b.rank() == 3 && !a.has_padding() && !b.has_padding() && is_const(a.strides[1], 0) &&
          is_const(b.strides[0], 0) && !is_const(a.strides[0], 0) && !is_const(b.strides[1], 0))
        ua = o;
    }
    if (ua < 0) return std::nullopt;
    Found f{0, without_dim(g_, mul.inputs[ua], 1), without_dim(g_, mul.inputs[1 - ua], 0), {}, {}, {}};
    // + b[n]: broadcast along M.
    auto add = sole_user(sum);
    if (!add || g_.node(*add).kind != OpKind::Add) return std::nullopt;
    auto other = other_input(*add, sum, mn);
    if (!other) return std::nullopt;
    const NodeInput& bias = g_.node(*add).inputs[*other];
    if (bias.view.rank() != 2 || !is_const(bias.view.strides[0], 0) || !is_const(bias.view.strides[1], 1) ||
        bias.view.has_padding() || !is_const(bias.view.offset, 0) || !product(g_.node(bias.node).shape).same(mn[1]))
      return std::nullopt;
    f.b = without_dim(g_, bias, 0);
    // * x0, then + x_l: both read whole as [M, n].
    auto scale = sole_user(*add);
    if (!scale || g_.node(*scale).kind != OpKind::Mul) return std::nullopt;
    auto x0 = whole_operand(*scale, *add, mn);
    if (!x0) return std::nullopt;
    f.x0 = *x0;
    auto root = sole_user(*scale);
    if (!root || g_.node(*root).kind != OpKind::Add) return std::nullopt;
    auto xl = whole_operand(*root, *scale, mn);
    if (!xl) return std::nullopt;
    f.xl = *xl;
    for (NodeId id : {sin.node, *add, *scale, *root})
      if (g_.node(id).dtype != dt) return std::nullopt;
    for (const GraphTensor* t : {&f.u, &f.w, &f.b, &f.x0, &f.xl})
      if (t->dtype != dt) return std::nullopt;
    f.root = *root;
    return f;
  }

 private:
  // The only user of id, if it has exactly one.
  std::optional<NodeId> sole_user(NodeId id) const {
    if (users_[id].size() != 1) return std::nullopt;
    return users_[id][0];
  }
  bool sole_user(NodeId id, NodeId user) const { return sole_user(id) == user; }

  // Binary node `op` reads `from` whole as [M, n] on one side: the other side's index.
  std::optional<int> other_input(NodeId op, NodeId from, const std::vector<Expr>& mn) const {
    const Node& n = g_.node(op);
    if (n.inputs.size() != 2 || n.shape.size() != 2 || !n.shape[0].same(mn[0]) || !n.shape[1].same(mn[1]))
      return std::nullopt;
    for (int s = 0; s < 2; ++s)
      if (n.inputs[s].node == from && n.inputs[1 - s].node != from && reads_whole(g_, n.inputs[s], mn)) return 1 - s;
    return std::nullopt;
  }

  // other_input's side when it too reads its producer whole as [M, n] (x0, x_l), as a tensor.
  std::optional<GraphTensor> whole_operand(NodeId op, NodeId from, const std::vector<Expr>& mn) const {
    const auto s = other_input(op, from, mn);
    if (!s || !reads_whole(g_, g_.node(op).inputs[*s], mn)) return std::nullopt;
    return read(g_, g_.node(op).inputs[*s]);
  }

  const Graph& g_;
  std::vector<std::vector<NodeId>> users_;
};

}  // namespace

std::vector<RuleMatch> find_cross_layer(const RuleContext& ctx) {
  const Graph& g = ctx.graph;
  const Matcher matcher(g);
  std::vector<RuleMatch> out;
  for (NodeId id = 0; id < g.size(); ++id) {
    const auto f = matcher.at(id);
    if (!f) continue;
    const int64_t n = f->w.dims()[0].as_const().value(), k = f->w.dims()[1].as_const().value();
    const DType dt = f->u.dtype;
    RuleMatch m{"cross_layer", fmt::format("x0 * (u W^T + b) + x_l, n {} k {} {}", n, k, dtype_name(dt)), {}};
    const bool cuda = ctx.backend != nullptr && ctx.backend->kind() == "cuda";
    std::string refusal;
    if (ctx.backend == nullptr || !ctx.backend->has_kernel("cross_gemm"))
      refusal = "no cross_gemm kernel on this backend";
    else if (cuda && dt != DType::BF16 && dt != DType::F16)
      refusal = fmt::format("the CUDA kernel multiplies f16 / bf16, not {}", dtype_name(dt));
    else if (cuda && (n % 8 != 0 || k % 8 != 0))
      refusal = fmt::format("the CUDA kernel needs n {} and k {} multiples of 8", n, k);
    const Found found = *f;
    Alternative a{"fused", refusal, {}};
    // Search-only on CUDA: which wins depends on the batch (H100, DLRM-v2 bf16, 2026-12-07: fused
    // 3% faster end to end at batch 2048, 6% at 16384, 13% slower at 270), so the search times it
    // (and checks its outputs) per bucket; the default plan keeps the decomposition. The wgmma
    // core's overlapped-stage forms (CrossGemmShape::overlap) lost at every batch: bench-only.
    a.search_only = cuda;
    using Map = std::function<GraphTensor(const GraphTensor&)>;
    auto fused = [found](int tile_m) {
      return Replacement{found.root, [found, tile_m](Graph&, const Map& map) {
                           return custom::cross_gemm(map(found.u), map(found.w), map(found.b), map(found.x0),
                                                     map(found.xl), true, 3, false, tile_m);
                         }};
    };
    a.replacement = fused(128);
    m.alternatives.push_back(a);
    // On CUDA also with 64-row tiles (wgmma cores; twice the blocks where 128-row tiles leave SMs
    // idle, as at 270 rows: 81 blocks on 132 SMs). Search-only and not yet measured.
    if (cuda) {
      a.name = "fused_m64";
      a.replacement = fused(64);
      m.alternatives.push_back(std::move(a));
    }
    m.alternatives.push_back({"decomposed", "", {}});
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace luminal::compiler::rules
