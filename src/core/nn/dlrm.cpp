// The DLRM model (facebookresearch/dlrm DLRM_Net, dot interaction): the graph path and the
// one-node megakernel path, which share dlrm_forward (the megakernel's decomposition).
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "custom/dlrm_mega/op.h"
#include "luminal/nn.h"

namespace luminal::nn {

// Row i of the strictly-lower triangle, Z[:, i, 0:i], is contiguous in the row-major pair order
// (1,0), (2,0), (2,1), ..., so n - 1 slices give every pair in order.
GraphTensor dot_interaction(const GraphTensor& x, const std::vector<GraphTensor>& ly) {
  if (x.rank() != 2) {
    throw std::invalid_argument(
        fmt::format("[dot_interaction] x must be [batch, d], got {}", shape_string(x.dims())));
  }
  const Expr batch = x.dims()[0], d = x.dims()[1];
  std::vector<GraphTensor> feats{x};
  for (size_t k = 0; k < ly.size(); ++k) {
    if (ly[k].rank() != 2 || !ly[k].dims()[0].same(batch) || !ly[k].dims()[1].same(d)) {
      throw std::invalid_argument(fmt::format("[dot_interaction] ly[{}] is {}, expected {}", k,
                                              shape_string(ly[k].dims()), shape_string(x.dims())));
    }
    feats.push_back(ly[k]);
  }
  const int n = static_cast<int>(feats.size());
  const GraphTensor t = concat(feats, 1).split_dims(1, d);  // [B, n, d]
  const GraphTensor z = t.matmul(t.transpose(1, 2));         // [B, n, n]
  std::vector<GraphTensor> parts{x};
  for (int i = 1; i < n; ++i) parts.push_back(z.slice(1, i, i + 1).slice(2, 0, i).merge_dims(1));
  return concat(parts, 1);
}

namespace {

// Matches nn::Linear::operator(): x @ W^T + b.
GraphTensor linear(const GraphTensor& x, const GraphTensor& w, const GraphTensor& b) {
  return x.matmul(w.transpose(0, 1)) + b;
}

// Matches nn::EmbeddingBag::operator() in sum mode.
GraphTensor embedding_bag_sum(const GraphTensor& table, const GraphTensor& idx, int64_t bag) {
  return table.gather(idx).split_dims(0, bag).sum(1);
}

// Throws unless t has these constant dims and dtype.
void check_input(const GraphTensor& t, const std::vector<int64_t>& dims, DType dt, const std::string& what) {
  bool ok = t.dtype == dt && t.rank() == static_cast<int>(dims.size());
  for (size_t i = 0; ok && i < dims.size(); ++i) ok = t.dims()[i].as_const() == dims[i];
  if (!ok) {
    throw std::invalid_argument(fmt::format("[dlrm] input '{}' is {} {}, expected {} [{}]", what,
                                            dtype_name(t.dtype), shape_string(t.dims()), dtype_name(dt),
                                            fmt::join(dims, ", ")));
  }
}

}  // namespace

DlrmTensors DlrmTensors::declare(Graph& g, const DlrmConfig& c) {
  c.validate();
  DlrmTensors t;
  t.dense_x = g.named_tensor("dense_x", {c.batch, c.ln_bot[0]});
  for (int64_t k = 0; k < c.num_tables(); ++k) {
    t.indices.push_back(g.named_tensor(fmt::format("indices_{}", k), {c.batch * c.bag}, c.index_dtype));
    t.tables.push_back(EmbeddingBag(g, fmt::format("emb_l.{}.weight", k), c.ln_emb[k], c.dim()).weight);
  }
  for (size_t i = 0; i + 1 < c.ln_bot.size(); ++i) {
    Linear l(g, fmt::format("bot_l.{}", 2 * i), c.ln_bot[i], c.ln_bot[i + 1]);
    t.bot_w.push_back(l.weight);
    t.bot_b.push_back(*l.bias);
  }
  for (size_t i = 0; i + 1 < c.ln_top.size(); ++i) {
    Linear l(g, fmt::format("top_l.{}", 2 * i), c.ln_top[i], c.ln_top[i + 1]);
    t.top_w.push_back(l.weight);
    t.top_b.push_back(*l.bias);
  }
  return t;
}

std::vector<GraphTensor> DlrmTensors::flat() const {
  std::vector<GraphTensor> v{dense_x};
  v.insert(v.end(), indices.begin(), indices.end());
  v.insert(v.end(), tables.begin(), tables.end());
  for (size_t i = 0; i < bot_w.size(); ++i) v.insert(v.end(), {bot_w[i], bot_b[i]});
  for (size_t i = 0; i < top_w.size(); ++i) v.insert(v.end(), {top_w[i], top_b[i]});
  return v;
}

DlrmTensors DlrmTensors::from_flat(const DlrmConfig& c, const std::vector<GraphTensor>& flat) {
  c.validate();
  const size_t k = c.ln_emb.size(), nb = c.ln_bot.size() - 1, nt = c.ln_top.size() - 1;
  const size_t want = 1 + 2 * k + 2 * nb + 2 * nt;
  if (flat.size() != want) {
    throw std::invalid_argument(fmt::format(
        "[dlrm] expected {} inputs (dense_x, {} indices, {} tables, {} bottom and {} top weight/bias pairs), got {}",
        want, k, k, nb, nt, flat.size()));
  }
  DlrmTensors t;
  size_t p = 0;
  t.dense_x = flat[p++];
  check_input(t.dense_x, {c.batch, c.ln_bot[0]}, DType::F32, "dense_x");
  for (size_t i = 0; i < k; ++i) {
    t.indices.push_back(flat[p++]);
    check_input(t.indices.back(), {c.batch * c.bag}, c.index_dtype, fmt::format("indices_{}", i));
  }
  for (size_t i = 0; i < k; ++i) {
    t.tables.push_back(flat[p++]);
    check_input(t.tables.back(), {c.ln_emb[i], c.dim()}, DType::F32, fmt::format("emb_l.{}.weight", i));
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
  mlp(c.ln_bot, "bot_l", t.bot_w, t.bot_b);
  mlp(c.ln_top, "top_l", t.top_w, t.top_b);
  return t;
}

GraphTensor dlrm_forward(const DlrmConfig& c, const DlrmTensors& t) {
  GraphTensor x = t.dense_x;
  for (size_t i = 0; i < t.bot_w.size(); ++i) x = linear(x, t.bot_w[i], t.bot_b[i]).relu();
  std::vector<GraphTensor> ly;
  for (size_t k = 0; k < t.tables.size(); ++k) ly.push_back(embedding_bag_sum(t.tables[k], t.indices[k], c.bag));
  GraphTensor r = dot_interaction(x, ly);
  for (size_t i = 0; i < t.top_w.size(); ++i) {
    r = linear(r, t.top_w[i], t.top_b[i]);
    r = i + 1 == t.top_w.size() ? r.sigmoid() : r.relu();
  }
  return r;
}

DlrmGraph build_dlrm(Graph& g, const DlrmConfig& c) {
  const DlrmTensors t = DlrmTensors::declare(g, c);
  DlrmGraph out{t.dense_x, t.indices, dlrm_forward(c, t)};
  out.out.output();
  return out;
}

DlrmGraph build_dlrm_mega(Graph& g, const DlrmConfig& c) {
  const DlrmTensors t = DlrmTensors::declare(g, c);
  DlrmGraph out{t.dense_x, t.indices, custom_op(std::make_shared<custom::DlrmMega>(c), t.flat())};
  out.out.output();
  return out;
}

}  // namespace luminal::nn
