// nn::DlrmTensors: the DLRM's inputs and weights, declared per config or split from DlrmMega's
// flat input list.
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "luminal/nn.h"

namespace luminal::nn {

namespace {

// Throws unless t has these dims (the same expressions: constants or the dynamic batch) and dtype.
void check_input(const GraphTensor& t, const std::vector<Expr>& dims, DType dt,
                 const std::string& what) {
  if (t.dtype != dt || !same_exprs(t.dims(), dims)) {
    throw std::invalid_argument(fmt::format("[dlrm] input '{}' is {} {}, expected {} {}", what,
                                            dtype_name(t.dtype), shape_string(t.dims()),
                                            dtype_name(dt), shape_string(dims)));
  }
}

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
    Linear l(g, prefix, ln[i], ln[i + 1], /*with_bias=*/true, dt);
    w.push_back(l.weight);
    b.push_back(*l.bias);
  }
}

// Throws unless t is 1-D of any (possibly dynamic) length in dtype dt: jagged indices [nnz_k].
void check_jagged(const GraphTensor& t, DType dt, const std::string& what) {
  if (t.dtype != dt || t.rank() != 1) {
    throw std::invalid_argument(fmt::format("[dlrm] input '{}' is {} {}, expected {} [nnz]", what,
                                            dtype_name(t.dtype), shape_string(t.dims()),
                                            dtype_name(dt)));
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
        EmbeddingBag(g, fmt::format("emb_l.{}.weight", k), c.ln_emb[k], c.dim(), c.mode, table_dt)
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

DlrmTensors DlrmTensors::from_flat(const DlrmConfig& c, const std::vector<GraphTensor>& flat) {
  c.validate();
  if (const std::string why = mega_refusal(c); !why.empty())
    throw std::invalid_argument("[dlrm] " + why);
  const size_t k = c.ln_emb.size(), nb = c.ln_bot.size() - 1, nt = c.ln_top.size() - 1;
  const size_t nk = c.jagged ? 3 * k : 2 * k;  // indices (offsets) and tables
  const size_t want = 1 + nk + 2 * nb + 2 * nt;
  if (flat.size() != want) {
    throw std::invalid_argument(fmt::format(
        "[dlrm] expected {} inputs (dense_x, {} indices, {}{} tables, {} bottom and {} "
        "top weight/bias pairs), got {}",
        want, k, c.jagged ? fmt::format("{} offsets, ", k) : "", k, nb, nt, flat.size()));
  }
  DlrmTensors t;
  size_t p = 0;
  t.dense_x = flat[p++];
  check_input(t.dense_x, {c.batch_dim(), c.ln_bot[0]}, DType::F32, "dense_x");
  for (size_t i = 0; i < k; ++i) {
    t.indices.push_back(flat[p++]);
    const std::string name = fmt::format("indices_{}", i);
    if (c.jagged)
      check_jagged(t.indices.back(), c.index_dtype, name);
    else
      check_input(t.indices.back(), {c.batch_dim() * c.bag}, c.index_dtype, name);
  }
  for (size_t i = 0; c.jagged && i < k; ++i) {
    t.offsets.push_back(flat[p++]);
    check_input(t.offsets.back(), {c.batch_dim()}, c.index_dtype, fmt::format("offsets_{}", i));
  }
  for (size_t i = 0; i < k; ++i) {
    t.tables.push_back(flat[p++]);
    check_input(t.tables.back(), {c.ln_emb[i], c.dim()}, DType::F32,
                fmt::format("emb_l.{}.weight", i));
  }
  auto mlp = [&](const std::vector<int64_t>& ln, const char* name, std::vector<GraphTensor>& w,
                 std::vector<GraphTensor>& b) {
    for (size_t i = 0; i + 1 < ln.size(); ++i) {
      w.push_back(flat[p++]);
      check_input(w.back(), {ln[i + 1], ln[i]}, DType::F32,
                  fmt::format("{}.{}.weight", name, 2 * i));
      b.push_back(flat[p++]);
      check_input(b.back(), {ln[i + 1]}, DType::F32, fmt::format("{}.{}.bias", name, 2 * i));
    }
  };
  mlp(c.ln_bot, "bot_l", t.bot_w, t.bot_b);
  mlp(c.ln_top, "top_l", t.top_w, t.top_b);
  return t;
}

}  // namespace luminal::nn
