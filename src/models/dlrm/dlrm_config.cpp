// models::DlrmConfig: validation, inference from a weights file's tensor names and shapes, and the
// sparse path rule.
#include <algorithm>
#include <functional>
#include <stdexcept>
#include <string>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "custom/dlrm_sparse/op.h"
#include "luminal/backend.h"
#include "luminal/models/dlrm.h"
#include "luminal/nn.h"
#include "luminal/safetensors.h"

namespace luminal::models {

int64_t DlrmConfig::dim() const { return ln_bot.empty() ? 0 : ln_bot.back(); }

int64_t DlrmConfig::num_tables() const { return static_cast<int64_t>(ln_emb.size()); }

namespace {

void require(bool ok, const std::string& msg) {
  if (!ok) throw std::invalid_argument("[dlrm] " + msg);
}

void require_positive(const std::vector<int64_t>& v, const char* what) {
  for (size_t i = 0; i < v.size(); ++i) {
    require(v[i] > 0,
            fmt::format("{}[{}] is {}; widths and vocab sizes must be positive", what, i, v[i]));
  }
}

}  // namespace

void DlrmConfig::validate() const {
  require(ln_bot.size() >= 2,
          fmt::format("ln_bot needs at least 2 widths (input, ..., d), got [{}]",
                      fmt::join(ln_bot, ", ")));
  require(ln_top.size() >= 2,
          fmt::format("ln_top needs at least 2 widths (interaction, ..., 1), got [{}]",
                      fmt::join(ln_top, ", ")));
  require(!ln_emb.empty(), "ln_emb is empty: need at least one sparse table");
  require_positive(ln_bot, "ln_bot");
  require_positive(ln_emb, "ln_emb");
  require_positive(ln_top, "ln_top");
  const int64_t n = num_tables() + 1;
  if (interaction == Interaction::Dot) {
    const int64_t want = dim() + n * (n - 1) / 2;
    require(ln_top[0] == want,
            fmt::format(
                "ln_top[0] is {}, but dot interaction of d = {} with {} tables gives {} + {} = {}",
                ln_top[0], dim(), num_tables(), dim(), n * (n - 1) / 2, want));
  } else {
    require(ln_top[0] == n * dim(),
            fmt::format("ln_top[0] is {}, but the cross layers' width is (1 + {} tables) x d = {} = {}",
                        ln_top[0], num_tables(), dim(), n * dim()));
    require(cross_layers >= 0 && (cross_layers == 0 || cross_rank > 0),
            fmt::format("cross layers {} of rank {}: the rank must be positive", cross_layers, cross_rank));
  }
  require(sparse != SparsePath::Split || interaction != Interaction::Dot || pairs == nn::PairOrder::Lower,
          "the split sparse path writes the lower pair order (DLRM_Net's) only");
  require(table_names.empty() || static_cast<int64_t>(table_names.size()) == num_tables(),
          fmt::format("{} table names for {} tables", table_names.size(), num_tables()));
  require(ln_top.back() == 1,
          fmt::format("ln_top must end with 1 (one logit), got {}", ln_top.back()));
  require(batch > 0, fmt::format("batch must be positive, got {}", batch));
  require(bag > 0, fmt::format("bag must be positive, got {}", bag));
  require(index_dtype == DType::I32 || index_dtype == DType::I64,
          fmt::format("index dtype must be i32 or i64, got {}", dtype_name(index_dtype)));
  require(jagged || !uses_sparse_op(sparse),
          "the fused sparse path reads offsets: it needs jagged bags (offsets_k inputs)");
}

std::string DlrmConfig::nnz_name(int64_t k) { return fmt::format("nnz_{}", k); }

Expr DlrmConfig::batch_dim() const { return dynamic_batch ? Expr::sym(batch_symbol) : Expr(batch); }

int64_t DlrmConfig::top_input_width() const {
  const int64_t k = ln_top.at(0);
  const bool pad = uses_sparse_op(sparse) && interaction == Interaction::Dot;  // DlrmSparse's aligned rows
  return pad ? (k + custom::kSparseColAlign - 1) / custom::kSparseColAlign * custom::kSparseColAlign : k;
}

int64_t DlrmConfig::bottom_input_width() const {
  const int64_t k = ln_bot.at(0);
  const bool pad = uses_sparse_op(sparse) && interaction == Interaction::Dot && activation_dtype(precision) != DType::F32;
  return pad ? (k + custom::kSparseColAlign - 1) / custom::kSparseColAlign * custom::kSparseColAlign : k;
}

std::string padded_weight_name(const std::string& name) { return name + ".padded"; }

std::string_view sparse_path_name(SparsePath p) {
  switch (p) {
    case SparsePath::Fused:
      return "fused";
    case SparsePath::Split:
      return "split";
    default:
      return "graph";
  }
}

bool uses_sparse_op(SparsePath p) { return p != SparsePath::Graph; }

// The rule until the search times the paths (the lead sets it from H200 measurements): the
// DlrmSparse op on CUDA as one kernel, where it replaces a gather + reduce per table and the
// interaction's concat, bmm and slices; the decomposed graph on the CPU, where the op would run
// the same graph anyway. Split measured slower on the H200 (2026-12-03: MLPerf bf16 b2048 70 vs
// 58 us): its finish kernel costs ~12 us, and the bags kernel, which fills every SM's shared
// memory, barely overlaps the bottom MLP's GEMMs. Uniform bags need offsets for the fused op; the caller then declares jagged inputs.
SparsePath choose_sparse_path(const DlrmConfig& c, const Backend& target) {
  // No shape-dependent choice yet: a measured crossover (tables, d, batch) goes here. The fused
  // kernels compute the dot interaction only.
  // bag_concat: x0 written by one kernel (no concat), dense or row-wise int8 tables (dequantized
  // while pooling; the graph path pools int8 rows with a [B, nnz] mask matmul).
  if (c.interaction == Interaction::Cross) return target.has_kernel("bag_concat") ? SparsePath::Fused : SparsePath::Graph;
  return target.has_kernel("dlrm_sparse") ? SparsePath::Fused : SparsePath::Graph;
}

namespace {

// Reads an MLP chain (layer i's tensors named prefix(i).weight / .bias) from w; returns its widths
// [in, out_0, out_1, ...]. prefix(i) may return "" to end the chain.
std::vector<int64_t> mlp_widths(const SafetensorsFile& w, const std::function<std::string(int)>& prefix) {
  std::vector<int64_t> widths;
  for (int i = 0;; ++i) {
    const std::string p = prefix(i);
    const std::string wn = p + ".weight", bn = p + ".bias";
    const SafeTensor* wt = p.empty() ? nullptr : w.find(wn);
    if (!wt) {
      require(i > 0, fmt::format("{}: missing '{}' (the first layer)", w.path(), wn));
      return widths;
    }
    require(wt->dtype == DType::F32,
            fmt::format("{}: '{}' is {}, expected f32", w.path(), wn, dtype_name(wt->dtype)));
    require(wt->shape.size() == 2 && wt->shape[0] > 0 && wt->shape[1] > 0,
            fmt::format("{}: '{}' has shape [{}], expected (out, in)", w.path(), wn,
                        fmt::join(wt->shape, ", ")));
    if (i == 0) widths.push_back(wt->shape[1]);
    require(
        wt->shape[1] == widths.back(),
        fmt::format("{}: '{}' has shape [{}], expected [*, {}] (the previous layer's output width)",
                    w.path(), wn, fmt::join(wt->shape, ", "), widths.back()));
    const SafeTensor* bt = w.find(bn);
    require(bt != nullptr, fmt::format("{}: missing '{}'", w.path(), bn));
    require(bt->dtype == DType::F32 && bt->shape == std::vector<int64_t>{wt->shape[0]},
            fmt::format("{}: '{}' is {} [{}], expected f32 [{}]", w.path(), bn,
                        dtype_name(bt->dtype), fmt::join(bt->shape, ", "), wt->shape[0]));
    widths.push_back(wt->shape[0]);
  }
}

// Checks table `name` is f32 [rows, d]; returns rows.
int64_t table_rows(const SafetensorsFile& w, const std::string& name, int64_t d) {
  const SafeTensor* t = w.find(name);
  require(t != nullptr, fmt::format("{}: missing '{}'", w.path(), name));
  require(t->dtype == DType::F32,
          fmt::format("{}: '{}' is {}, expected f32", w.path(), name, dtype_name(t->dtype)));
  require(t->shape.size() == 2 && t->shape[1] == d,
          fmt::format("{}: '{}' has shape [{}], expected [vocab, {}] (d = the bottom MLP's width)",
                      w.path(), name, fmt::join(t->shape, ", "), d));
  return t->shape[0];
}

// Checks a cross-net tensor's dtype and shape.
void check_cross(const SafetensorsFile& w, const std::string& name, const std::vector<int64_t>& shape) {
  const SafeTensor* t = w.find(name);
  require(t != nullptr, fmt::format("{}: missing '{}'", w.path(), name));
  require(t->dtype == DType::F32 && t->shape == shape,
          fmt::format("{}: '{}' is {} [{}], expected f32 [{}]", w.path(), name, dtype_name(t->dtype),
                      fmt::join(t->shape, ", "), fmt::join(shape, ", ")));
}

constexpr std::string_view kTorchRecTables = "sparse_arch.embedding_bag_collection.embedding_bags.";
constexpr std::string_view kCrossNet = "inter_arch.crossnet.";

// Layer l of a torchrec crossnet tensor's name, "inter_arch.crossnet.{V_kernels,W_kernels,bias}.<l>".
int64_t cross_layer_of(const SafetensorsFile& w, const std::string& name) {
  const std::string rest = name.substr(kCrossNet.size());
  const size_t dot = rest.find('.');
  const std::string kind = rest.substr(0, dot), index = dot == std::string::npos ? "" : rest.substr(dot + 1);
  const bool known = kind == "V_kernels" || kind == "W_kernels" || kind == "bias";
  const bool numeric = !index.empty() && index.size() <= 6 &&
                       std::all_of(index.begin(), index.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
  require(known && numeric, fmt::format("{}: '{}' is not a crossnet tensor torchrec's LowRankCrossNet writes "
                                        "(V_kernels.<l>, W_kernels.<l>, bias.<l>)", w.path(), name));
  return std::stoll(index);
}

// Table names in a torchrec state_dict, ordered by their numeric suffix (t_cat_2 before t_cat_10),
// then by name.
std::vector<std::string> torchrec_tables(const SafetensorsFile& w) {
  std::vector<std::string> names;
  for (const SafeTensor& t : w.tensors())
    if (t.name.starts_with(kTorchRecTables) && t.name.ends_with(".weight"))
      names.push_back(t.name.substr(kTorchRecTables.size(), t.name.size() - kTorchRecTables.size() - 7));
  sort_by_numeric_suffix(names);
  return names;
}

// torchrec DLRM_DCN (cross layers) or DLRM (dot interaction: no inter_arch weights, its pairs in
// triu_indices order): bottom, tables, cross layers and top from their names.
DlrmConfig from_torchrec(const SafetensorsFile& w, DlrmConfig c) {
  c.names = WeightNames::TorchRec;
  c.interaction = Interaction::Cross;
  c.sigmoid = false;  // torchrec's DLRM returns the logit
  c.ln_bot = mlp_widths(w, [](int i) { return fmt::format("dense_arch.model._mlp.{}._linear", i); });
  c.table_names = torchrec_tables(w);
  require(!c.table_names.empty(), fmt::format("{}: no '{}<table>.weight' tensors", w.path(), kTorchRecTables));
  for (size_t k = 0; k < c.table_names.size(); ++k)
    c.ln_emb.push_back(table_rows(w, dlrm_table_name(c, k) + ".weight", c.dim()));
  // The layer count from every crossnet tensor's index (not from the V_kernels run alone: a missing
  // V_kernels.1 would otherwise load as a one-layer model, silently wrong), each layer's three
  // tensors then required by name.
  for (const SafeTensor& t : w.tensors()) {  // DLRM_Projection's interaction branches, or another arch
    require(!t.name.starts_with("inter_arch.") || t.name.starts_with(kCrossNet),
            fmt::format("{}: '{}': torchrec's DLRM_Projection is not supported (DLRM and DLRM_DCN are)", w.path(), t.name));
    if (t.name.starts_with(kCrossNet)) c.cross_layers = std::max(c.cross_layers, cross_layer_of(w, t.name) + 1);
  }
  if (c.cross_layers == 0) {  // torchrec's DLRM
    c.interaction = Interaction::Dot;
    c.pairs = nn::PairOrder::Upper;
  }
  const int64_t n = (c.num_tables() + 1) * c.dim();
  if (c.cross_layers > 0) {  // the rank from V_kernels.0's shape
    const std::string name = std::string(kCrossNet) + "V_kernels.0";
    const SafeTensor* v0 = w.find(name);
    require(v0 != nullptr, fmt::format("{}: missing '{}'", w.path(), name));
    require(v0->shape.size() == 2, fmt::format("{}: '{}' is not 2-D", w.path(), name));
    c.cross_rank = v0->shape[0];
  }
  for (int64_t l = 0; l < c.cross_layers; ++l) {
    check_cross(w, fmt::format("{}V_kernels.{}", kCrossNet, l), {c.cross_rank, n});
    check_cross(w, fmt::format("{}W_kernels.{}", kCrossNet, l), {n, c.cross_rank});
    check_cross(w, fmt::format("{}bias.{}", kCrossNet, l), {n});
  }
  // over_arch: an MLP (model.0) then the logit Linear (model.1).
  bool last = false;
  c.ln_top = mlp_widths(w, [&](int i) -> std::string {
    if (last) return "";
    const std::string p = fmt::format("over_arch.model.0._mlp.{}._linear", i);
    if (w.find(p + ".weight")) return p;
    last = true;
    return "over_arch.model.1";
  });
  c.validate();
  return c;
}

}  // namespace

void sort_by_numeric_suffix(std::vector<std::string>& names) {
  auto suffix = [](const std::string& s) {
    const size_t at = s.find_last_not_of("0123456789");
    return at + 1 < s.size() ? std::stoll(s.substr(at + 1)) : -1;
  };
  std::sort(names.begin(), names.end(), [&](const std::string& a, const std::string& b) {
    return std::pair(suffix(a), a) < std::pair(suffix(b), b);
  });
}

DlrmConfig DlrmConfig::from_weights(const SafetensorsFile& w, int64_t batch, int64_t bag) {
  DlrmConfig c;
  c.batch = batch;
  c.bag = bag;
  if (w.find("dense_arch.model._mlp.0._linear.weight") != nullptr) return from_torchrec(w, c);
  c.ln_bot = mlp_widths(w, [](int i) { return fmt::format("bot_l.{}", 2 * i); });
  c.ln_top = mlp_widths(w, [](int i) { return fmt::format("top_l.{}", 2 * i); });
  for (int k = 0; w.find(fmt::format("emb_l.{}.weight", k)); ++k)
    c.ln_emb.push_back(table_rows(w, fmt::format("emb_l.{}.weight", k), c.dim()));
  require(!c.ln_emb.empty(),
          fmt::format("{}: missing 'emb_l.0.weight' (no sparse tables)", w.path()));
  c.validate();
  return c;
}

}  // namespace luminal::models
