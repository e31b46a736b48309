// models::DlrmConfig: validation, inference from a weights file's tensor names and shapes, and the
// sparse path rule.
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
  const int64_t want = dim() + n * (n - 1) / 2;
  require(ln_top[0] == want,
          fmt::format(
              "ln_top[0] is {}, but dot interaction of d = {} with {} tables gives {} + {} = {}",
              ln_top[0], dim(), num_tables(), dim(), n * (n - 1) / 2, want));
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
  return uses_sparse_op(sparse) ? (k + custom::kSparseColAlign - 1) / custom::kSparseColAlign * custom::kSparseColAlign : k;
}

int64_t DlrmConfig::bottom_input_width() const {
  const int64_t k = ln_bot.at(0);
  const bool pad = uses_sparse_op(sparse) && activation_dtype(precision) != DType::F32;
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
  (void)c;  // no shape-dependent choice yet: a measured crossover (tables, d, batch) goes here
  return target.has_kernel("dlrm_sparse") ? SparsePath::Fused : SparsePath::Graph;
}

namespace {

// Reads an MLP "prefix.{2i}.weight/bias" chain from w; returns its widths [in, out_0, out_1, ...].
std::vector<int64_t> mlp_widths(const SafetensorsFile& w, const std::string& prefix) {
  std::vector<int64_t> widths;
  for (int i = 0;; ++i) {
    const std::string wn = fmt::format("{}.{}.weight", prefix, 2 * i);
    const std::string bn = fmt::format("{}.{}.bias", prefix, 2 * i);
    const SafeTensor* wt = w.find(wn);
    if (!wt) {
      require(i > 0, fmt::format("{}: missing '{}' (the first {} layer)", w.path(), wn, prefix));
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

}  // namespace

DlrmConfig DlrmConfig::from_weights(const SafetensorsFile& w, int64_t batch, int64_t bag) {
  DlrmConfig c;
  c.batch = batch;
  c.bag = bag;
  c.ln_bot = mlp_widths(w, "bot_l");
  c.ln_top = mlp_widths(w, "top_l");
  for (int k = 0;; ++k) {
    const std::string name = fmt::format("emb_l.{}.weight", k);
    const SafeTensor* t = w.find(name);
    if (!t) break;
    require(t->dtype == DType::F32,
            fmt::format("{}: '{}' is {}, expected f32", w.path(), name, dtype_name(t->dtype)));
    require(t->shape.size() == 2 && t->shape[1] == c.dim(),
            fmt::format("{}: '{}' has shape [{}], expected [vocab, {}] (d = ln_bot.back())",
                        w.path(), name, fmt::join(t->shape, ", "), c.dim()));
    c.ln_emb.push_back(t->shape[0]);
  }
  require(!c.ln_emb.empty(),
          fmt::format("{}: missing 'emb_l.0.weight' (no sparse tables)", w.path()));
  c.validate();
  return c;
}

}  // namespace luminal::models
