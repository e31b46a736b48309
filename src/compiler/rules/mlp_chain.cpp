// The mlp_chain rule: two or more Linear (+ bias, + ReLU) layers in a row, each layer's result read
// only by the next layer's matmul, offered as custom::MlpChain (CUDA: the whole chain in one
// persistent launch, mlp_chain.cuh) instead of one GEMM library call per layer. Found by structure:
// per layer the canonical matmul (SumReduce over k of Mul(x[M, 1, k], W^T[1, n, k])), + b[n], and
// optionally relu(y) = y * cast(0 < y); the next layer's x is that result read whole. Search-only:
// whether one launch beats the library's per-layer kernels depends on the batch and the widths, so
// the search times it (and checks its outputs) per bucket. Not yet measured on a GPU.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "compiler/rules/rules.h"
#include "custom/mlp_chain/op.h"

namespace luminal::compiler::rules {

namespace {

bool is_const(const Expr& e, int64_t v) { return e.as_const() == v; }

// One Linear layer: its matmul's SumReduce, the node holding its result (after bias and ReLU), and
// its operands as old-graph tensors (x [M, k], W [n, k], b [n]); x_node is where x reads whole
// from, if it does.
struct Layer {
  NodeId sum = 0, top = 0;
  GraphTensor x, w, b;
  std::optional<NodeId> x_node;
  bool relu = false;
  int64_t n = 0, k = 0;
};

class Matcher {
 public:
  explicit Matcher(const Graph& g) : g_(g), users_(g.size()) {
    for (NodeId id = 0; id < g.size(); ++id)
      for (const NodeInput& in : g.node(id).inputs) users_[in.node].push_back(id);
  }

  // The Linear layer whose matmul is SumReduce `sum`, or nullopt.
  std::optional<Layer> at(NodeId sum) const {
    const Node& s = g_.node(sum);
    if (s.kind != OpKind::SumReduce || s.inputs.size() != 1 || s.axis != 2 || s.shape.size() != 2) return std::nullopt;
    const std::vector<Expr> mn = s.shape;
    const NodeInput& sin = s.inputs[0];
    const Node& mul = g_.node(sin.node);
    const Expr k = sin.view.dims[2];
    if (mul.kind != OpKind::Mul || mul.inputs.size() != 2 || users_[sin.node].size() != 1 || !k.as_const() ||
        !mn[1].as_const() || !reads_whole(g_, sin, {mn[0], mn[1], k}))
      return std::nullopt;
    int xa = -1;  // x reads [M, n, k] with stride 0 along n, W^T with stride 0 along M
    for (int o = 0; o < 2 && xa < 0; ++o) {
      const ShapeTracker &a = mul.inputs[o].view, &b = mul.inputs[1 - o].view;
      if (a.rank() == 3 && b.rank() == 3 && !a.has_padding() && !b.has_padding() && is_const(a.strides[1], 0) &&
          is_const(b.strides[0], 0) && !is_const(a.strides[0], 0) && !is_const(b.strides[1], 0))
        xa = o;
    }
    if (xa < 0) return std::nullopt;
    Layer l;
    l.sum = sum, l.n = *mn[1].as_const(), l.k = *k.as_const();
    l.x = without_dim(g_, mul.inputs[xa], 1);
    l.w = without_dim(g_, mul.inputs[1 - xa], 0);
    const NodeInput& xin = mul.inputs[xa];
    if (is_const(xin.view.offset, 0) && is_const(xin.view.strides[2], 1) && xin.view.strides[0].same(k) &&
        product(g_.node(xin.node).shape).same(mn[0] * k))
      l.x_node = xin.node;  // [M, k] row-major over the whole producer
    // + b[n], broadcast along M.
    if (users_[sum].size() != 1 || g_.node(users_[sum][0]).kind != OpKind::Add) return std::nullopt;
    const NodeId add = users_[sum][0];
    const Node& a = g_.node(add);
    bool found_bias = false;
    for (int side = 0; side < 2 && !found_bias; ++side) {
      const NodeInput &y = a.inputs[side], &bias = a.inputs[1 - side];
      const ShapeTracker& v = bias.view;
      if (y.node != sum || bias.node == sum || !reads_whole(g_, y, mn) || v.rank() != 2 || !is_const(v.strides[0], 0) ||
          !is_const(v.strides[1], 1) || v.has_padding() || !is_const(v.offset, 0) ||
          !product(g_.node(bias.node).shape).same(mn[1]))
        continue;
      l.b = without_dim(g_, bias, 0);
      found_bias = true;
    }
    if (!found_bias) return std::nullopt;
    l.top = add;
    if (auto r = relu_of(add)) l.top = *r, l.relu = true;
    for (NodeId id : {sin.node, add, l.top})
      if (g_.node(id).dtype != s.dtype) return std::nullopt;
    for (const GraphTensor* t : {&l.x, &l.w, &l.b})
      if (t->dtype != s.dtype) return std::nullopt;
    return l;
  }

  // The layer's result feeds exactly one node (the next layer's matmul, when it is one).
  bool single_use(NodeId top) const { return users_[top].size() == 1; }

 private:
  // relu(top) = Mul(top, Cast(LessThan(0, top))), each read whole: the Mul.
  std::optional<NodeId> relu_of(NodeId top) const {
    if (users_[top].size() != 2) return std::nullopt;
    std::optional<NodeId> mul, lt;
    for (NodeId u : users_[top]) {
      if (g_.node(u).kind == OpKind::Mul) mul = u;
      if (g_.node(u).kind == OpKind::LessThan) lt = u;
    }
    if (!mul || !lt) return std::nullopt;
    const Node& l = g_.node(*lt);
    const Node& zero = g_.node(l.inputs[0].node);
    const std::vector<Expr>& shape = g_.node(top).shape;
    if (zero.kind != OpKind::Constant || zero.value != 0.0 || l.inputs[1].node != top ||
        !reads_whole(g_, l.inputs[1], shape) || users_[*lt].size() != 1)
      return std::nullopt;
    const NodeId cast = users_[*lt][0];
    const Node& c = g_.node(cast);
    if (c.kind != OpKind::Cast || c.dtype != g_.node(top).dtype || users_[cast].size() != 1 || users_[cast][0] != *mul ||
        !reads_whole(g_, c.inputs[0], shape))
      return std::nullopt;
    const Node& m = g_.node(*mul);
    for (int s = 0; s < 2; ++s)
      if (m.inputs[s].node == top && m.inputs[1 - s].node == cast && reads_whole(g_, m.inputs[s], shape) &&
          reads_whole(g_, m.inputs[1 - s], shape))
        return mul;
    return std::nullopt;
  }

  const Graph& g_;
  std::vector<std::vector<NodeId>> users_;
};

}  // namespace

std::vector<RuleMatch> find_mlp_chain(const RuleContext& ctx) {
  // The dlrm rule (before this one) covers DLRM-v1 whole, its MLPs included.
  if (ctx.earlier != nullptr &&
      std::any_of(ctx.earlier->begin(), ctx.earlier->end(), [](const RuleMatch& m) { return m.rule == "dlrm"; }))
    return {};
  const Graph& g = ctx.graph;
  const Matcher matcher(g);
  std::vector<Layer> layers;
  std::map<NodeId, size_t> by_top;  // a layer's result node -> the layer
  for (NodeId id = 0; id < g.size(); ++id)
    if (auto l = matcher.at(id)) {
      by_top[l->top] = layers.size();
      layers.push_back(std::move(*l));
    }
  // next[i]: the layer reading layer i's result whole, when nothing else reads it.
  std::vector<std::optional<size_t>> next(layers.size());
  std::vector<bool> has_prev(layers.size(), false);
  for (size_t j = 0; j < layers.size(); ++j) {
    if (!layers[j].x_node) continue;
    auto it = by_top.find(*layers[j].x_node);
    if (it == by_top.end() || !matcher.single_use(it->first) || layers[it->second].n != layers[j].k) continue;
    next[it->second] = j, has_prev[j] = true;
  }
  std::vector<RuleMatch> out;
  for (size_t i = 0; i < layers.size(); ++i) {
    if (has_prev[i] || !next[i]) continue;
    std::vector<Layer> chain{layers[i]};
    for (auto j = next[i]; j; j = next[*j]) chain.push_back(layers[*j]);
    // A first layer of k not a multiple of 8 (DLRM's 13 dense features) stays a GEMM of its own and
    // the chain starts after it: the kernel reads rows in 16-byte chunks.
    while (chain.size() >= 2 && chain[0].k % 8 != 0) chain.erase(chain.begin());
    if (chain.size() < 2) continue;
    const DType dt = chain[0].x.dtype;
    std::string widths = fmt::format("{}", chain[0].k);
    for (const Layer& l : chain) widths += fmt::format("-{}{}", l.n, l.relu ? "" : " (no relu)");
    RuleMatch m{"mlp_chain", fmt::format("{} Linear layers {}, {}", chain.size(), widths, dtype_name(dt)), {}};
    std::string refusal;
    if (ctx.backend == nullptr || ctx.backend->kind() != "cuda")
      refusal = "the chain kernel is CUDA's (elsewhere the layers' GEMMs run as they are)";
    else if (dt != DType::BF16 && dt != DType::F16)
      refusal = fmt::format("the CUDA kernel multiplies f16 / bf16, not {}", dtype_name(dt));
    for (const Layer& l : chain)
      if (refusal.empty() && l.k % 8 != 0) refusal = fmt::format("the CUDA kernel needs every k a multiple of 8, not {}", l.k);
    using Map = std::function<GraphTensor(const GraphTensor&)>;
    auto fused = [chain](int tile_m) {
      return Replacement{chain.back().top, [chain, tile_m](Graph&, const Map& map) {
                           std::vector<GraphTensor> ws, bs;
                           std::vector<bool> relu;
                           for (const Layer& l : chain) ws.push_back(map(l.w)), bs.push_back(map(l.b)), relu.push_back(l.relu);
                           return custom::mlp_chain(map(chain[0].x), ws, bs, relu, tile_m);
                         }};
    };
    m.alternatives.push_back({"chain", refusal, fused(64), true});
    m.alternatives.push_back({"chain_m32", refusal, fused(32), true});  // twice the tiles at small batches
    m.alternatives.push_back({"decomposed", "", {}});
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace luminal::compiler::rules
