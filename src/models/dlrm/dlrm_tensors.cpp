// models::DlrmTensors: the DLRM's inputs and weights, declared per config or split from DlrmMega's
// flat input list.
#include <functional>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "luminal/models/dlrm.h"
#include "luminal/nn.h"

namespace luminal::models {

namespace {

// The persisted weight and bias of each layer of an MLP with widths ln, layer i named
// prefix(i).weight / .bias; the first layer's weight takes `in0` input columns (ln[0] rounded up,
// the extra columns zero: padded_weight_name).
void declare_mlp(Graph& g, const std::vector<int64_t>& ln, const std::function<std::string(size_t)>& prefix,
                 DType dt, int64_t in0, std::vector<GraphTensor>& w, std::vector<GraphTensor>& b) {
  for (size_t i = 0; i + 1 < ln.size(); ++i) {
    const std::string p = prefix(i);
    if (i == 0 && in0 != ln[0]) {
      w.push_back(g.named_tensor(padded_weight_name(p + ".weight"), {ln[1], in0}, dt).persist());
      b.push_back(g.named_tensor(p + ".bias", {ln[1]}, dt).persist());
      continue;
    }
    nn::Linear l(g, p, ln[i], ln[i + 1], /*with_bias=*/true, dt);
    w.push_back(l.weight);
    b.push_back(*l.bias);
  }
}

}  // namespace

std::string dlrm_layer_name(const DlrmConfig& c, bool top, size_t i) {
  if (c.names == WeightNames::DlrmNet) return fmt::format("{}_l.{}", top ? "top" : "bot", 2 * i);
  if (!top) return fmt::format("dense_arch.model._mlp.{}._linear", i);
  return i + 2 < c.ln_top.size() ? fmt::format("over_arch.model.0._mlp.{}._linear", i) : "over_arch.model.1";
}

std::string dlrm_table_name(const DlrmConfig& c, size_t k) {
  if (c.names == WeightNames::DlrmNet) return fmt::format("emb_l.{}", k);
  const std::string table = k < c.table_names.size() ? c.table_names[k] : fmt::format("t_cat_{}", k);
  return "sparse_arch.embedding_bag_collection.embedding_bags." + table;
}

DlrmTensors DlrmTensors::declare(Graph& g, const DlrmConfig& c, bool tables) {
  c.validate();
  const DType act = activation_dtype(c.precision);
  const bool int8 = int8_tables(c.precision);
  DlrmTensors t;
  t.dense_x = g.named_tensor("dense_x", {c.batch_dim(), c.ln_bot[0]});  // always f32: cast in the graph
  for (int64_t k = 0; tables && k < c.num_tables(); ++k) {
    const Expr n = c.jagged ? Expr::sym(DlrmConfig::nnz_name(k)) : c.batch_dim() * c.bag;
    t.indices.push_back(g.named_tensor(fmt::format("indices_{}", k), {n}, c.index_dtype));
    if (c.jagged)
      t.offsets.push_back(g.named_tensor(fmt::format("offsets_{}", k), {c.batch_dim()}, c.index_dtype));
    const DType table_dt = int8 ? DType::U8 : act;
    const std::string table = dlrm_table_name(c, size_t(k));
    t.tables.push_back(nn::EmbeddingBag(g, table + ".weight", c.ln_emb[k], c.dim(), c.mode, table_dt).weight);
    if (int8)
      t.scale_bias.push_back(g.named_tensor(table + ".scale_bias", {c.ln_emb[k], 2}, DType::F32).persist());
  }
  declare_mlp(g, c.ln_bot, [&](size_t i) { return dlrm_layer_name(c, false, i); }, act, c.bottom_input_width(),
              t.bot_w, t.bot_b);
  if (c.interaction == Interaction::Cross) {
    const int64_t n = c.ln_top[0];
    for (int64_t l = 0; l < c.cross_layers; ++l) {
      const std::string p = "inter_arch.crossnet.";
      t.cross_v.push_back(g.named_tensor(fmt::format("{}V_kernels.{}", p, l), {c.cross_rank, n}, act).persist());
      t.cross_w.push_back(g.named_tensor(fmt::format("{}W_kernels.{}", p, l), {n, c.cross_rank}, act).persist());
      t.cross_b.push_back(g.named_tensor(fmt::format("{}bias.{}", p, l), {n}, act).persist());
    }
  }
  declare_mlp(g, c.ln_top, [&](size_t i) { return dlrm_layer_name(c, true, i); }, act, c.top_input_width(),
              t.top_w, t.top_b);
  return t;
}

std::vector<GraphTensor> DlrmTensors::flat() const {
  std::vector<GraphTensor> v{dense_x};
  v.insert(v.end(), indices.begin(), indices.end());
  v.insert(v.end(), offsets.begin(), offsets.end());  // empty for uniform bags
  v.insert(v.end(), tables.begin(), tables.end());
  for (size_t i = 0; i < bot_w.size(); ++i) v.insert(v.end(), {bot_w[i], bot_b[i]});
  for (size_t i = 0; i < top_w.size(); ++i) v.insert(v.end(), {top_w[i], top_b[i]});
  return v;
}

}  // namespace luminal::models
