// The DLRM rule (shared/DESIGN.md section 9): a DLRM forward found by match_dlrm is offered as
// the megakernel (custom::DlrmMega, one kernel), as the fused sparse path (custom::DlrmSparse for
// the bags + interaction, the MLPs as they are), or as the graph itself. The order is a measured
// rule until the search times them: the megakernel where it fits (8.5 us vs 15 us at the seed
// shape on the H200), else the fused sparse path (docs/benchmarks.md, production sweep).
#include <algorithm>
#include <memory>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/rules/dlrm_match.h"
#include "custom/dlrm_mega/op.h"
#include "custom/dlrm_sparse/op.h"

namespace luminal::compiler::rules {

namespace {

using Map = std::function<GraphTensor(const GraphTensor&)>;

GraphTensor whole(const Graph& g, NodeId id) { return GraphTensor(const_cast<Graph*>(&g), id); }

std::vector<int64_t> widths(const std::vector<MatchedLinear>& mlp) {
  std::vector<int64_t> w{*mlp.front().in.as_const()};
  for (const MatchedLinear& l : mlp) w.push_back(*l.out.as_const());
  return w;
}

// The match as a DlrmConfig (jagged fp32 bags), or why it cannot be one.
std::string config_of(const Graph& g, const DlrmMatch& m, custom::DlrmMegaShape& c) {
  // A dynamic batch must be one symbol (nn's "batch", an export's "s0"): the kernels read its value
  // at run time, and the replacement keeps its name.
  const std::vector<std::string> syms = m.batch.symbols();
  c.dynamic_batch = syms.size() == 1 && m.batch.same(Expr::sym(syms[0]));
  if (c.dynamic_batch) c.batch_symbol = syms[0];
  if (!m.batch.as_const() && !c.dynamic_batch)
    return fmt::format("the batch is the expression {}, not a number or one symbol",
                       m.batch.to_string());
  if (m.mixed_modes) return "the tables mix sum and mean bags";
  if (m.mixed_offsets) return "the tables mix open and closed (KeyedJaggedTensor) offsets";
  c.ln_bot = widths(m.bottom);
  c.ln_top = widths(m.top);
  c.batch = c.dynamic_batch ? 1 : *m.batch.as_const();  // dynamic: read from the inputs at run time
  c.jagged = true;
  c.mode = m.mode;
  for (NodeId b : m.bags) {
    const Node& bag = g.node(b);
    const NodeInput &table = bag.inputs[0], &idx = bag.inputs[1], &off = bag.inputs[2];
    const auto v = table.view.dims[0].as_const(), d = table.view.dims[1].as_const();
    if (!v || d != c.ln_bot.back()) return "a table's shape is not [rows, d]";
    if (g.node(table.node).dtype != m.dtype)
      return fmt::format("the tables are not {} like the MLPs", dtype_name(m.dtype));
    c.ln_emb.push_back(*v);
    c.index_dtype = g.node(idx.node).dtype;
    if (g.node(off.node).dtype != c.index_dtype) return "indices and offsets differ in dtype";
  }
  try {
    c.validate();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

// The megakernel's inputs in DlrmMega order, moved into the rebuilt graph.
std::vector<GraphTensor> mega_inputs(const Graph& g, const DlrmMatch& m, const Map& map) {
  std::vector<GraphTensor> flat{map(whole(g, m.dense_x))};
  for (size_t input : {1, 2, 0})  // every table's indices, then offsets, then the tables
    for (NodeId b : m.bags) flat.push_back(map(read(g, g.node(b).inputs[input])));
  for (const auto* mlp : {&m.bottom, &m.top})
    for (const MatchedLinear& l : *mlp)
      flat.push_back(map(whole(g, l.w))), flat.push_back(map(whole(g, l.bias)));
  return flat;
}

Alternative mega(const Graph& g, const DlrmMatch& m, const custom::DlrmMegaShape& c, const std::string& why,
                 const RuleContext& ctx) {
  Alternative a{"mega", why, {}};
  // Exact fp32 FFMA: what fp32 and tf32x3 (fp32 accuracy) promise, not tf32's rounding.
  if (a.refusal.empty() && ctx.precision != Precision::F32 && ctx.precision != Precision::TF32X3)
    a.refusal = fmt::format("runs fp32 only, not {}", precision_name(ctx.precision));
  if (a.refusal.empty() && m.dtype != DType::F32)
    a.refusal = fmt::format("runs fp32 only, not a {} graph", dtype_name(m.dtype));
  // torchrec's DLRM: the megakernel reads open offsets, writes the lower pair order and ends in
  // a sigmoid.
  if (a.refusal.empty() && m.closed) a.refusal = "reads open offsets only, not KeyedJaggedTensor bags";
  if (a.refusal.empty() && m.pairs != nn::PairOrder::Lower) a.refusal = "writes the lower pair order only";
  if (a.refusal.empty() && !m.sigmoid) a.refusal = "ends in a sigmoid, the model in the logit";
  if (a.refusal.empty()) a.refusal = custom::why_unsupported(c, ctx.caps());
  if (!a.refusal.empty()) return a;
  a.replacement = {m.root, [&g, m, c](Graph&, const Map& map) {
                     return custom_op(std::make_shared<custom::DlrmMega>(c), mega_inputs(g, m, map));
                   }};
  return a;
}

Alternative fused_sparse(const Graph& g, const DlrmMatch& m, const custom::DlrmMegaShape& c,
                         const std::string& why, bool host) {
  Alternative a{"fused_sparse", why, {}};
  if (!a.refusal.empty()) return a;
  custom::DlrmSparseShape s;
  s.batch = c.batch, s.dim = c.dim(), s.rows = c.ln_emb, s.mode = c.mode;
  s.dynamic_batch = c.dynamic_batch;
  s.batch_symbol = c.batch_symbol;
  s.index_dtype = c.index_dtype;
  s.dtype = m.dtype;
  s.closed = m.closed;
  s.pairs = m.pairs;
  a.refusal = custom::why_unsupported(s);
  if (!a.refusal.empty()) return a;
  const MatchedLinear last = m.bottom.back(), first = m.top.front();
  // The kernel writes R with its width rounded up to 8 columns (zeros) and the first top weight
  // gets the same zero columns, as nn's fused path does: an odd K made cuBLASLt pick unaligned
  // kernels (35 us instead of ~5 us for MLPerf's first top layer on the H200). So the
  // replacement is the first top layer's matmul, reading the padded R.
  // A host backend (no compute capability) needs no aligned K: oneDNN takes any, and the padded
  // weight would be copied on every call (124 us of 10.8 ms, Kaggle fp32 batch 2048, 2 cores).
  s.col_align = host ? 1 : custom::kSparseColAlign;
  const int64_t extra = s.padded_width() - *first.in.as_const();
  a.replacement = {first.sum, [&g, m, s, last, first, extra](Graph&, const Map& map) {
                     // x = relu(linear + bias) again: the old one sits inside the replaced region.
                     std::vector<GraphTensor> in{
                         (map(whole(g, last.sum)) + map(whole(g, last.bias))).relu()};
                     for (NodeId b : m.bags)
                       for (const NodeInput& i : g.node(b).inputs) in.push_back(map(read(g, i)));
                     const GraphTensor r = custom_op(std::make_shared<custom::DlrmSparse>(s), in);
                     GraphTensor w = map(whole(g, first.w));
                     // contiguous(): the padded copy gets a buffer, so cuBLASLt runs the matmul
                     // (a padded view is not BLAS-shaped: as a generated kernel the plan took
                     // 350 us, the decomposed graph 150 us, Kaggle fp32, H200 2026-12-03).
                     if (extra > 0) w = w.pad(1, 0, extra).contiguous();
                     return r.matmul(w.transpose(0, 1));
                   }};
  return a;
}

}  // namespace

std::vector<RuleMatch> find_dlrm(const RuleContext& ctx) {
  std::vector<RuleMatch> out;
  for (const DlrmMatch& m : match_dlrm(ctx)) {
    custom::DlrmMegaShape c;
    const std::string why = config_of(ctx.graph, m, c);
    RuleMatch r{"dlrm", "", {}};
    r.summary = why.empty()
                    ? fmt::format("{}bottom {}, {} {} tables x {}, top {}, batch {}{}{}{}",
                                  m.dtype == DType::F32 ? "" : fmt::format("{} ", dtype_name(m.dtype)),
                                  fmt::join(c.ln_bot, "-"), c.ln_emb.size(),
                                  c.mode == nn::BagMode::Sum ? "sum" : "mean", c.dim(),
                                  fmt::join(c.ln_top, "-"),
                                  c.dynamic_batch ? c.batch_symbol : std::to_string(c.batch),
                                  m.closed ? ", KeyedJaggedTensor bags" : "",
                                  m.pairs == nn::PairOrder::Upper ? ", triu pairs" : "",
                                  m.sigmoid ? "" : ", logit out")
                    : fmt::format("{} bottom / {} top layers, {} tables", m.bottom.size(),
                                  m.top.size(), m.bags.size());
    r.alternatives.push_back(mega(ctx.graph, m, c, why, ctx));
    const bool host = ctx.backend != nullptr && ctx.caps().cc_major == 0;
    r.alternatives.push_back(fused_sparse(ctx.graph, m, c, why, host));
    r.alternatives.push_back({"decomposed", "", {}});
    // An alternative whose kernel the backend lacks runs its decomposition, no faster than the
    // graph itself (CPU backend, seed shape, batch 2048: 4.9 ms vs 0.3 ms for mega): such
    // alternatives come after the graph and stay offered (named, or timed by the search).
    if (ctx.backend != nullptr) {
      const auto has = [&](const Alternative& a) {
        if (a.name == "mega") return ctx.backend->has_kernel("dlrm_mega");
        return a.name != "fused_sparse" || ctx.backend->has_kernel("dlrm_sparse");
      };
      std::stable_partition(r.alternatives.begin(), r.alternatives.end(), has);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace luminal::compiler::rules
