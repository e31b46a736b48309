// The DLRM model (facebookresearch/dlrm DLRM_Net, dot interaction): the graph path and the
// one-node megakernel path, which share dlrm_forward (the megakernel's decomposition), at any
// precision, with the sparse path from ordinary ops or the fused DlrmSparse op.
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "custom/dlrm_mega/op.h"
#include "dlrm_fused.h"
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
  const GraphTensor z = t.matmul(t.transpose(1, 2));        // [B, n, n]
  std::vector<GraphTensor> parts{x};
  for (int i = 1; i < n; ++i) parts.push_back(z.slice(1, i, i + 1).slice(2, 0, i).merge_dims(1));
  return concat(parts, 1);
}

namespace {

// Matches nn::Linear::operator(): x @ W^T + b.
GraphTensor linear(const GraphTensor& x, const GraphTensor& w, const GraphTensor& b) {
  return x.matmul(w.transpose(0, 1)) + b;
}

// Table k's rows for its indices, [n, d]: dense rows as stored, or Int8 codes dequantized in f32
// (code * scale + bias, the scale and bias broadcast along the row).
GraphTensor table_rows(const DlrmConfig& c, const DlrmTensors& t, size_t k) {
  const GraphTensor rows = t.tables[k].gather(t.indices[k]);
  if (c.precision != Precision::Int8) return rows;
  const GraphTensor sb = t.scale_bias[k].gather(t.indices[k]);  // [n, 2]
  const std::vector<Expr> shape = rows.dims();
  return rows.cast(DType::F32) * sb.slice(1, 0, 1).expand_to(shape) +
         sb.slice(1, 1, 2).expand_to(shape);
}

// Table k's embedding bags [B, d] in the activation dtype (Int8 sums its f32 rows, then casts).
GraphTensor embedding_bag(const DlrmConfig& c, const DlrmTensors& t, size_t k) {
  const DType act = activation_dtype(c.precision);
  // Dense jagged tables as one EmbeddingBag node (PyTorch's op, which the DLRM rule recognizes;
  // one gather-and-reduce kernel on CUDA instead of a mask matmul).
  if (c.jagged && c.precision != Precision::Int8) {
    const GraphTensor bags = nn::embedding_bag(t.tables[k], t.indices[k], t.offsets[k], c.mode);
    return bags.dtype == act ? bags : bags.cast(act);
  }
  const GraphTensor rows = table_rows(c, t, k);
  GraphTensor bags;
  if (c.jagged) {
    bags = jagged_bag(rows, t.offsets[k], c.mode);
  } else {
    const GraphTensor split = rows.split_dims(0, c.bag);
    bags = c.mode == BagMode::Sum ? split.sum(1) : split.mean(1);
  }
  return bags.dtype == act ? bags : bags.cast(act);
}

// The sparse path from ordinary ops: every table's bags, then the dot interaction.
GraphTensor graph_sparse(const DlrmConfig& c, const DlrmTensors& t, const GraphTensor& x) {
  std::vector<GraphTensor> ly;
  for (size_t k = 0; k < t.tables.size(); ++k) ly.push_back(embedding_bag(c, t, k));
  return dot_interaction(x, ly);
}

}  // namespace

GraphTensor dlrm_forward(const DlrmConfig& c, const DlrmTensors& t) {
  const DType act = activation_dtype(c.precision);
  GraphTensor x = t.dense_x.dtype == act ? t.dense_x : t.dense_x.cast(act);
  // Zero columns up to the padded bottom weight (one kernel with the cast; aligned cuBLASLt rows).
  if (const int64_t extra = c.bottom_input_width() - c.ln_bot[0]; extra > 0)
    x = x.pad(1, 0, extra).contiguous();
  for (size_t i = 0; i < t.bot_w.size(); ++i) x = linear(x, t.bot_w[i], t.bot_b[i]).relu();
  GraphTensor r = uses_sparse_op(c.sparse) ? fused_sparse(c, t, x) : graph_sparse(c, t, x);
  for (size_t i = 0; i + 1 < t.top_w.size(); ++i) r = linear(r, t.top_w[i], t.top_b[i]).relu();
  // The logit goes to f32 before the sigmoid: bf16 steps of 2^-9 near 0.5 would tie and reorder
  // predictions that differ by less (Spearman), for the price of a [B, 1] cast.
  const GraphTensor logit = linear(r, t.top_w.back(), t.top_b.back());
  return (logit.dtype == DType::F32 ? logit : logit.cast(DType::F32)).sigmoid();
}

DlrmGraph build_dlrm(Graph& g, const DlrmConfig& c) {
  const DlrmTensors t = DlrmTensors::declare(g, c);
  DlrmGraph out{t.dense_x, t.indices, dlrm_forward(c, t), t.offsets, t};
  out.out.output();
  return out;
}

std::string mega_refusal(const DlrmConfig& c) {
  if (c.precision != Precision::F32) {
    return fmt::format("the megakernel runs fp32 only, not {}", precision_name(c.precision));
  }
  if (c.sparse != SparsePath::Graph)
    return "the megakernel has its own sparse path (sparse = graph)";
  return "";
}

DlrmGraph build_dlrm_mega(Graph& g, const DlrmConfig& c) {
  if (const std::string why = mega_refusal(c); !why.empty())
    throw std::invalid_argument("[dlrm] " + why);
  const DlrmTensors t = DlrmTensors::declare(g, c);
  DlrmGraph out{t.dense_x, t.indices, custom_op(std::make_shared<custom::DlrmMega>(c), t.flat()),
                t.offsets, t};
  out.out.output();
  return out;
}

}  // namespace luminal::nn
