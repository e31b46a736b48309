// DlrmMegaShape checks, DlrmMega's input split and its reference forward from nn layers.
#include "custom/dlrm_mega/shape.h"
#include "custom/embedding_bag/op.h"

#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace luminal::custom {

namespace {

void require(bool ok, const std::string& msg) {
  if (!ok) throw std::invalid_argument("[dlrm] " + msg);
}

void require_positive(const std::vector<int64_t>& v, const char* what) {
  for (size_t i = 0; i < v.size(); ++i)
    require(v[i] > 0,
            fmt::format("{}[{}] is {}; widths and vocab sizes must be positive", what, i, v[i]));
}

// Throws unless t has these dims (the same expressions: constants or the dynamic batch) and dtype.
void check_input(const GraphTensor& t, const std::vector<Expr>& dims, DType dt,
                 const std::string& what) {
  if (t.dtype != dt || !same_exprs(t.dims(), dims))
    throw std::invalid_argument(fmt::format("[dlrm] input '{}' is {} {}, expected {} {}", what,
                                            dtype_name(t.dtype), shape_string(t.dims()),
                                            dtype_name(dt), shape_string(dims)));
}

}  // namespace

void DlrmMegaShape::validate() const {
  require(ln_bot.size() >= 2, fmt::format("ln_bot needs at least 2 widths (input, ..., d), got [{}]",
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
  require(ln_top.back() == 1, fmt::format("ln_top must end with 1 (one logit), got {}", ln_top.back()));
  require(batch > 0, fmt::format("batch must be positive, got {}", batch));
  require(bag > 0, fmt::format("bag must be positive, got {}", bag));
  require(index_dtype == DType::I32 || index_dtype == DType::I64,
          fmt::format("index dtype must be i32 or i64, got {}", dtype_name(index_dtype)));
}

DlrmMegaInputs DlrmMegaInputs::split(const DlrmMegaShape& s, const std::vector<GraphTensor>& flat) {
  s.validate();
  const size_t k = s.ln_emb.size(), nb = s.ln_bot.size() - 1, nt = s.ln_top.size() - 1;
  const size_t nk = s.jagged ? 3 * k : 2 * k;  // indices (offsets) and tables
  const size_t want = 1 + nk + 2 * nb + 2 * nt;
  if (flat.size() != want)
    throw std::invalid_argument(fmt::format(
        "[dlrm] expected {} inputs (dense_x, {} indices, {}{} tables, {} bottom and {} "
        "top weight/bias pairs), got {}",
        want, k, s.jagged ? fmt::format("{} offsets, ", k) : "", k, nb, nt, flat.size()));
  DlrmMegaInputs t;
  size_t p = 0;
  t.dense_x = flat[p++];
  check_input(t.dense_x, {s.batch_dim(), s.ln_bot[0]}, DType::F32, "dense_x");
  for (size_t i = 0; i < k; ++i) {
    t.indices.push_back(flat[p++]);
    const GraphTensor& idx = t.indices.back();
    const std::string name = fmt::format("indices_{}", i);
    if (!s.jagged) {
      check_input(idx, {s.batch_dim() * s.bag}, s.index_dtype, name);
    } else if (idx.dtype != s.index_dtype || idx.rank() != 1) {
      throw std::invalid_argument(fmt::format("[dlrm] input '{}' is {} {}, expected {} [nnz]",
                                              name, dtype_name(idx.dtype),
                                              shape_string(idx.dims()), dtype_name(s.index_dtype)));
    }
  }
  for (size_t i = 0; s.jagged && i < k; ++i) {
    t.offsets.push_back(flat[p++]);
    check_input(t.offsets.back(), {s.batch_dim()}, s.index_dtype, fmt::format("offsets_{}", i));
  }
  for (size_t i = 0; i < k; ++i) {
    t.tables.push_back(flat[p++]);
    check_input(t.tables.back(), {s.ln_emb[i], s.dim()}, DType::F32,
                fmt::format("emb_l.{}.weight", i));
  }
  auto mlp = [&](const std::vector<int64_t>& ln, const char* name, std::vector<GraphTensor>& w,
                 std::vector<GraphTensor>& b) {
    for (size_t i = 0; i + 1 < ln.size(); ++i) {
      w.push_back(flat[p++]);
      check_input(w.back(), {ln[i + 1], ln[i]}, DType::F32, fmt::format("{}.{}.weight", name, 2 * i));
      b.push_back(flat[p++]);
      check_input(b.back(), {ln[i + 1]}, DType::F32, fmt::format("{}.{}.bias", name, 2 * i));
    }
  };
  mlp(s.ln_bot, "bot_l", t.bot_w, t.bot_b);
  mlp(s.ln_top, "top_l", t.top_w, t.top_b);
  return t;
}

GraphTensor dlrm_mega_forward(const DlrmMegaShape& s, const DlrmMegaInputs& in) {
  GraphTensor x = in.dense_x;
  for (size_t i = 0; i < in.bot_w.size(); ++i) x = nn::linear(x, in.bot_w[i], in.bot_b[i]).relu();
  std::vector<GraphTensor> ly;
  for (size_t k = 0; k < in.tables.size(); ++k) {
    if (s.jagged) {  // one EmbeddingBag node: a gather-and-reduce kernel where DlrmMega has none
      ly.push_back(embedding_bag(in.tables[k], in.indices[k], in.offsets[k], s.mode));
    } else {
      const GraphTensor split = in.tables[k].gather(in.indices[k]).split_dims(0, s.bag);
      ly.push_back(s.mode == nn::BagMode::Sum ? split.sum(1) : split.mean(1));
    }
  }
  GraphTensor r = nn::dot_interaction(x, ly);
  for (size_t i = 0; i + 1 < in.top_w.size(); ++i) r = nn::linear(r, in.top_w[i], in.top_b[i]).relu();
  return nn::linear(r, in.top_w.back(), in.top_b.back()).sigmoid();
}

}  // namespace luminal::custom
