// models::DlrmTensors: the DLRM's inputs and weights, declared per config or split from DlrmMega's
// flat input list.
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "luminal/models/dlrm.h"
#include "luminal/nn.h"

namespace luminal::models {

namespace {

// The persisted weight and bias of each layer of an MLP with widths ln; the first layer's weight
// takes `in0` input columns (ln[0] rounded up, the extra columns zero: padded_weight_name).
void declare_mlp(Graph& g, const std::vector<int64_t>& ln, const char* name, DType dt, int64_t in0,
                 std::vector<GraphTensor>& w, std::vector<GraphTensor>& b) {
  for (size_t i = 0; i + 1 < ln.size(); ++i) {
    const std::string prefix = fmt::format("{}.{}", name, 2 * i);
    if (i == 0 && in0 != ln[0]) {
      w.push_back(g.named_tensor(padded_weight_name(prefix + ".weight"), {ln[1], in0}, dt).persist());
      b.push_back(g.named_tensor(prefix + ".bias", {ln[1]}, dt).persist());
      continue;
    }
    nn::Linear l(g, prefix, ln[i], ln[i + 1], /*with_bias=*/true, dt);
    w.push_back(l.weight);
    b.push_back(*l.bias);
  }
}

}  // namespace

DlrmTensors DlrmTensors::declare(Graph& g, const DlrmConfig& c) {
  c.validate();
  const DType act = activation_dtype(c.precision);
  const bool int8 = c.precision == Precision::Int8;
  DlrmTensors t;
  t.dense_x = g.named_tensor("dense_x", {c.batch_dim(), c.ln_bot[0]});  // always f32: cast in the graph
  for (int64_t k = 0; k < c.num_tables(); ++k) {
    const Expr n = c.jagged ? Expr::sym(DlrmConfig::nnz_name(k)) : c.batch_dim() * c.bag;
    t.indices.push_back(g.named_tensor(fmt::format("indices_{}", k), {n}, c.index_dtype));
    if (c.jagged)
      t.offsets.push_back(g.named_tensor(fmt::format("offsets_{}", k), {c.batch_dim()}, c.index_dtype));
    const DType table_dt = int8 ? DType::U8 : act;
    t.tables.push_back(
        nn::EmbeddingBag(g, fmt::format("emb_l.{}.weight", k), c.ln_emb[k], c.dim(), c.mode, table_dt)
            .weight);
    if (int8) {
      t.scale_bias.push_back(
          g.named_tensor(fmt::format("emb_l.{}.scale_bias", k), {c.ln_emb[k], 2}, DType::F32)
              .persist());
    }
  }
  declare_mlp(g, c.ln_bot, "bot_l", act, c.bottom_input_width(), t.bot_w, t.bot_b);
  declare_mlp(g, c.ln_top, "top_l", act, c.top_input_width(), t.top_w, t.top_b);
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
