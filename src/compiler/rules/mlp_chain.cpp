// The mlp_chain rule: two or more dense layers in a row, each one's result read only by the next,
// offered as custom::MlpChain (CUDA: the whole chain in one persistent launch, mlp_chain.cuh)
// instead of one GEMM library call (and elementwise kernels) per layer. A step is a Linear layer
// (x W^T + b, optionally ReLU) or a DCNv2 cross layer (u = x_l V^T, then x0 * (u W^T + b) + x_l with
// x0 the chain's input), so DLRM-v2's cross net and top MLP are one chain. Found by structure
// (linear_match.h). Search-only: whether one launch beats the per-layer kernels depends on the batch
// and the widths, so the search times it (and checks its outputs) per bucket. Not yet measured on a
// GPU.
#include <algorithm>
#include <deque>
#include <map>

#include <fmt/format.h>

#include "compiler/rules/linear_match.h"
#include "compiler/rules/rules.h"
#include "custom/mlp_chain/op.h"

namespace luminal::compiler::rules {

namespace {

using custom::ChainEpilogue;

// One step of a chain and the kernel layers it becomes.
struct Step {
  NodeId top = 0;                     // the node holding the step's result
  GraphTensor x;                      // its input [M, k]
  std::optional<NodeId> x_node;       // x's producer, when x reads it whole
  size_t x_readers = 1;               // the step's nodes reading x (a cross step: V's matmul and the residual)
  std::optional<NodeId> x0_node;      // a cross step's x0
  int64_t k = 0;
  std::vector<GraphTensor> w;
  std::vector<std::optional<GraphTensor>> b;
  std::vector<ChainEpilogue> epi;
  std::vector<int64_t> widths;
  std::string text;  // "-1024", "-256 (no relu)", "-cross(r512)"
};

// t is a whole node read in row-major order from its start: the kernel's cp.async rows need the
// node's own (16-byte aligned) buffer, not a view into the middle of another.
bool whole(const Graph& g, const GraphTensor& t) {
  const ShapeTracker& v = t.view;
  return v.is_contiguous() && !v.has_padding() && v.offset.as_const() == 0 && v.numel().same(product(g.node(t.id).shape));
}

std::optional<Step> linear_step(const Graph& g, const Users& users, NodeId sum) {
  const auto mm = match_matmul_2d(g, users, sum);
  if (!mm || !whole(g, mm->w)) return std::nullopt;
  const auto bias = match_bias(g, users, sum);
  if (!bias) return std::nullopt;
  Step s;
  s.top = bias->first, s.x = mm->x, s.x_node = mm->x_node, s.k = mm->k;
  const auto relu = match_relu(g, users, s.top);
  if (relu) s.top = *relu;
  s.w = {mm->w}, s.b = {bias->second}, s.widths = {mm->n};
  s.epi = {relu ? ChainEpilogue::Relu : ChainEpilogue::None};
  s.text = fmt::format("-{}{}", mm->n, relu ? "" : " (no relu)");
  const DType dt = g.node(sum).dtype;
  for (NodeId id : {bias->first, s.top})
    if (g.node(id).dtype != dt) return std::nullopt;
  for (const GraphTensor* t : {&s.x, &s.w[0], &*s.b[0]})
    if (t->dtype != dt) return std::nullopt;
  return s;
}

// The cross step `cr` with its V matmul, which must produce u (read by nothing else) from x_l.
std::optional<Step> cross_step(const Graph& g, const Users& users, const CrossFound& cr) {
  if (!cr.u_node || users[*cr.u_node].size() != 1) return std::nullopt;
  const auto vm = match_matmul_2d(g, users, *cr.u_node);
  if (!vm || !vm->x_node || *vm->x_node != cr.xl.id || vm->x.dtype != cr.u.dtype || vm->w.dtype != cr.u.dtype ||
      !whole(g, vm->w) || !whole(g, cr.w) || !whole(g, cr.x0))
    return std::nullopt;
  Step s;
  s.top = cr.root, s.x = vm->x, s.x_node = vm->x_node, s.x_readers = 2, s.x0_node = cr.x0.id, s.k = vm->k;
  s.w = {vm->w, cr.w}, s.b = {std::nullopt, cr.b}, s.widths = {vm->n, *cr.w.dims()[0].as_const()};
  s.epi = {ChainEpilogue::None, ChainEpilogue::Cross};
  s.text = fmt::format("-cross(r{})", vm->n);
  return s;
}

size_t layer_count(const std::vector<Step>& chain) {
  size_t n = 0;
  for (const Step& s : chain) n += s.widths.size();
  return n;
}

}  // namespace

std::vector<RuleMatch> find_mlp_chain(const RuleContext& ctx) {
  // The dlrm rule (before this one) covers DLRM-v1 whole, its MLPs included.
  if (ctx.earlier != nullptr &&
      std::any_of(ctx.earlier->begin(), ctx.earlier->end(), [](const RuleMatch& m) { return m.rule == "dlrm"; }))
    return {};
  const Graph& g = ctx.graph;
  const Users users = users_of(g);
  std::vector<Step> steps;
  for (NodeId id = 0; id < g.size(); ++id) {
    if (const auto cr = match_cross(g, users, id)) {  // never a Linear step too (its bias feeds x0 *)
      if (auto s = cross_step(g, users, *cr)) steps.push_back(std::move(*s));
    } else if (auto l = linear_step(g, users, id)) {
      steps.push_back(std::move(*l));
    }
  }
  // next[i]: the step reading step i's result whole, when nothing else reads it.
  std::map<NodeId, size_t> by_top;
  for (size_t i = 0; i < steps.size(); ++i) by_top[steps[i].top] = i;
  std::vector<std::optional<size_t>> next(steps.size());
  std::vector<bool> has_prev(steps.size(), false);
  for (size_t j = 0; j < steps.size(); ++j) {
    auto it = steps[j].x_node ? by_top.find(*steps[j].x_node) : by_top.end();
    if (it == by_top.end()) continue;
    const Step& i = steps[it->second];
    if (users[i.top].size() != steps[j].x_readers || i.widths.back() != steps[j].k) continue;
    next[it->second] = j, has_prev[j] = true;
  }
  std::deque<std::vector<Step>> chains;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (has_prev[i] || !next[i]) continue;
    std::vector<Step> chain{steps[i]};
    for (auto j = next[i]; j; j = next[*j]) chain.push_back(steps[*j]);
    chains.push_back(std::move(chain));
  }
  std::vector<RuleMatch> out;
  while (!chains.empty()) {
    std::vector<Step> chain = std::move(chains.front());
    chains.pop_front();
    // A first Linear layer of k not a multiple of 8 (DLRM's 13 dense features), or reading a view
    // rather than a whole tensor, stays a GEMM of its own: the kernel reads rows of its input's own
    // buffer in 16-byte chunks.
    while (!chain.empty() && !chain[0].x0_node && (chain[0].k % 8 != 0 || !chain[0].x_node)) chain.erase(chain.begin());
    // A cross step's x0 must be the chain's input: the chain ends before one that reads another,
    // which may start a chain of its own.
    for (size_t s = 1; s < chain.size(); ++s)
      if (chain[s].x0_node && chain[s].x0_node != chain[0].x_node) {
        chains.emplace_back(chain.begin() + long(s), chain.end());
        chain.resize(s);
        break;
      }
    if (chain.empty() || (chain[0].x0_node && chain[0].x0_node != chain[0].x_node) || layer_count(chain) < 2) continue;
    const DType dt = chain[0].x.dtype;
    std::string text = fmt::format("{}", chain[0].k);
    for (const Step& s : chain) text += s.text;
    RuleMatch m{"mlp_chain", fmt::format("{} layers {}, {}", layer_count(chain), text, dtype_name(dt)), {}};
    std::string refusal;
    if (ctx.backend == nullptr || ctx.backend->kind() != "cuda")
      refusal = "the chain kernel is CUDA's (elsewhere the layers' GEMMs run as they are)";
    else if (dt != DType::BF16 && dt != DType::F16)
      refusal = fmt::format("the CUDA kernel multiplies f16 / bf16, not {}", dtype_name(dt));
    int64_t in = chain[0].k;
    for (const Step& s : chain)
      for (int64_t n : s.widths) {
        if (refusal.empty() && in % 8 != 0)
          refusal = fmt::format("the CUDA kernel needs every layer's k a multiple of 8, not {}", in);
        in = n;
      }
    using Map = std::function<GraphTensor(const GraphTensor&)>;
    auto fused = [chain](int tile_m) {
      return Replacement{chain.back().top, [chain, tile_m](Graph&, const Map& map) {
                           std::vector<GraphTensor> ws;
                           std::vector<std::optional<GraphTensor>> bs;
                           std::vector<ChainEpilogue> epi;
                           for (const Step& s : chain)
                             for (size_t l = 0; l < s.w.size(); ++l) {
                               ws.push_back(map(s.w[l]));
                               bs.push_back(s.b[l] ? std::optional<GraphTensor>(map(*s.b[l])) : std::nullopt);
                               epi.push_back(s.epi[l]);
                             }
                           return custom::mlp_chain(map(chain[0].x), ws, bs, epi, tile_m);
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
