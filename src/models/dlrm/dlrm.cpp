// The DLRM model (facebookresearch/dlrm DLRM_Net, dot interaction): the graph path at any
// precision (sparse path from ordinary ops or the fused DlrmSparse op) and the one-node
// megakernel path.
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "custom/bag_concat/op.h"
#include "custom/dlrm_mega/op.h"
#include "custom/embedding_bag/op.h"
#include "models/dlrm/dlrm_fused.h"
#include "models/dlrm/mega.h"
#include "luminal/models/dlrm.h"
#include "luminal/nn.h"

namespace luminal::models {

namespace {

using nn::linear;

// Table k's rows for its indices, [n, d]: dense rows as stored, or Int8 codes dequantized in f32
// (code * scale + bias, the scale and bias broadcast along the row).
GraphTensor table_rows(const DlrmConfig& c, const DlrmTensors& t, size_t k) {
  if (int8_tables(c.precision)) return nn::gather_rowwise_u8(t.tables[k], t.scale_bias[k], t.indices[k]);
  return t.tables[k].gather(t.indices[k]);
}

// Table k's embedding bags [B, d] in the activation dtype (Int8 sums its f32 rows, then casts).
GraphTensor embedding_bag(const DlrmConfig& c, const DlrmTensors& t, size_t k) {
  const DType act = activation_dtype(c.precision);
  if (!t.pooled.empty()) return t.pooled[k].dtype == act ? t.pooled[k] : t.pooled[k].cast(act);
  // Dense jagged tables as one EmbeddingBag node (PyTorch's op, which the DLRM rule recognizes;
  // one gather-and-reduce kernel on CUDA instead of a mask matmul).
  if (c.jagged && !int8_tables(c.precision)) {
    const GraphTensor bags = custom::embedding_bag(t.tables[k], t.indices[k], t.offsets[k], c.mode);
    return bags.dtype == act ? bags : bags.cast(act);
  }
  const GraphTensor rows = table_rows(c, t, k);
  GraphTensor bags;
  if (c.jagged) {
    bags = nn::jagged_bag(rows, t.offsets[k], c.mode);
  } else {
    const GraphTensor split = rows.split_dims(0, c.bag);
    bags = c.mode == BagMode::Sum ? split.sum(1) : split.mean(1);
  }
  return bags.dtype == act ? bags : bags.cast(act);
}

// The sparse path from ordinary ops: every table's bags, then the dot interaction.
GraphTensor graph_sparse(const DlrmConfig& c, const DlrmTensors& t, const GraphTensor& x) {
  std::vector<GraphTensor> ly;
  for (size_t k = 0; k < size_t(c.num_tables()); ++k) ly.push_back(embedding_bag(c, t, k));
  return nn::dot_interaction(x, ly, c.pairs);
}

// DCNv2: x0 = [x, bags...] ([B, (1 + tables) d]), then the low-rank cross layers.
GraphTensor cross_net(const DlrmConfig& c, const DlrmTensors& t, const GraphTensor& x) {
  GraphTensor x0;
  const std::vector<GraphTensor> scale_bias = int8_tables(c.precision) ? t.scale_bias : std::vector<GraphTensor>{};
  if (c.sparse == SparsePath::Split && t.pooled.empty()) {
    // The bags without x (one kernel, beside the bottom MLP when captured with graph branches), then x0.
    x0 = concat({x, custom::bags_concat(t.tables, t.indices, t.offsets, c.mode, x.dtype, /*stacked=*/false,
                                        scale_bias)}, 1);
  } else if (uses_sparse_op(c.sparse) && t.pooled.empty()) {  // one kernel writes x0 (choose_sparse_path: bag_concat's host kernel)
    x0 = custom::bag_concat(x, t.tables, t.indices, t.offsets, c.mode, /*stacked=*/false, scale_bias);
  } else {
    std::vector<GraphTensor> parts{x};
    for (size_t k = 0; k < size_t(c.num_tables()); ++k) parts.push_back(embedding_bag(c, t, k));
    x0 = concat(parts, 1);
  }
  GraphTensor xl = x0;
  for (size_t l = 0; l < t.cross_v.size(); ++l) xl = nn::low_rank_cross(x0, xl, t.cross_v[l], t.cross_w[l], t.cross_b[l]);
  return xl;
}

}  // namespace

GraphTensor dlrm_forward(const DlrmConfig& c, const DlrmTensors& t) {
  const DType act = activation_dtype(c.precision);
  GraphTensor x = t.dense_x.dtype == act ? t.dense_x : t.dense_x.cast(act);
  // Zero columns up to the padded bottom weight (one kernel with the cast; aligned cuBLASLt rows).
  if (const int64_t extra = c.bottom_input_width() - c.ln_bot[0]; extra > 0)
    x = x.pad(1, 0, extra).contiguous();
  for (size_t i = 0; i < t.bot_w.size(); ++i) x = linear(x, t.bot_w[i], t.bot_b[i]).relu();
  GraphTensor r = c.interaction == Interaction::Cross ? cross_net(c, t, x)
                  : uses_sparse_op(c.sparse) && t.pooled.empty() ? fused_sparse(c, t, x)
                                                      : graph_sparse(c, t, x);
  for (size_t i = 0; i + 1 < t.top_w.size(); ++i) r = linear(r, t.top_w[i], t.top_b[i]).relu();
  // The logit goes to f32 before the sigmoid: bf16 steps of 2^-9 near 0.5 would tie and reorder
  // predictions that differ by less (Spearman), for the price of a [B, 1] cast.
  GraphTensor logit = linear(r, t.top_w.back(), t.top_b.back());
  if (logit.dtype != DType::F32) logit = logit.cast(DType::F32);
  return c.sigmoid ? logit.sigmoid() : logit;
}

DlrmGraph build_dlrm(Graph& g, const DlrmConfig& c) {
  const DlrmTensors t = DlrmTensors::declare(g, c);
  DlrmGraph out{t.dense_x, t.indices, dlrm_forward(c, t), t.offsets, t};
  out.out.output();
  return out;
}

std::string mega_refusal(const DlrmConfig& c) {
  if (c.precision != Precision::F32 && c.precision != Precision::TF32X3) {  // tf32x3: fp32 accuracy
    return fmt::format("the megakernel runs fp32 only, not {}", precision_name(c.precision));
  }
  if (c.sparse != SparsePath::Graph)
    return "the megakernel has its own sparse path (sparse = graph)";
  if (c.interaction != Interaction::Dot) return "the megakernel computes the dot interaction only";
  if (c.pairs != nn::PairOrder::Lower) return "the megakernel writes the lower pair order (DLRM_Net's)";
  if (!c.sigmoid) return "the megakernel ends in a sigmoid";
  return "";
}

custom::DlrmMegaShape mega_shape(const DlrmConfig& c) {
  custom::DlrmMegaShape s;
  s.ln_bot = c.ln_bot, s.ln_emb = c.ln_emb, s.ln_top = c.ln_top;
  s.batch = c.batch, s.bag = c.bag, s.index_dtype = c.index_dtype, s.jagged = c.jagged;
  s.mode = c.mode, s.dynamic_batch = c.dynamic_batch, s.batch_symbol = c.batch_symbol;
  return s;
}

std::string megakernel_refusal(const DlrmConfig& c, const DeviceCaps& device) {
  const std::string why = mega_refusal(c);
  return why.empty() ? custom::why_unsupported(mega_shape(c), device) : why;
}

DlrmGraph build_dlrm_mega(Graph& g, const DlrmConfig& c) {
  if (const std::string why = mega_refusal(c); !why.empty())
    throw std::invalid_argument("[dlrm] " + why);
  const DlrmTensors t = DlrmTensors::declare(g, c);
  DlrmGraph out{t.dense_x, t.indices,
                custom_op(std::make_shared<custom::DlrmMega>(mega_shape(c)), t.flat()), t.offsets,
                t};
  out.out.output();
  return out;
}

}  // namespace luminal::models
