// Transformer pieces on the GraphTensor API: RMSNorm with weight and causal grouped-query
// attention. Plain ops only, so later rewrite rules (fused RMSNorm, fused/flash attention) can
// match them.
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

#include "luminal/nn.h"

namespace luminal::nn {

// transformers' LlamaRMSNorm: weight * (x.float() * rsqrt(mean(x^2) + eps)).to(x.dtype).
GraphTensor rms_norm(const GraphTensor& x, const GraphTensor& weight, double eps) {
  const GraphTensor xf = x.dtype == DType::F32 ? x : x.cast(DType::F32);
  GraphTensor y = xf.rms_norm(-1, eps);
  if (x.dtype != DType::F32) y = y.cast(x.dtype);
  return y * weight;
}

// Grouped-query attention as two batched matmuls over the kv heads: q [s, H, d] -> [KV, g*s, d]
// (one copy of q), k and v [t, KV, d] read in place as [KV, t, d]; scores [KV, g*s, t] -> mask ->
// softmax -> @ v. Each batch is a plain [g*s, d] x [d, t] product, so the CUDA lowering can hand
// both matmuls to cuBLASLt (a stride-0 broadcast of k over the group would not be BLAS-shaped).
GraphTensor causal_attention(const GraphTensor& q, const GraphTensor& k, const GraphTensor& v,
                             const GraphTensor& q_pos, double scale) {
  if (q.rank() != 3 || k.rank() != 3 || v.rank() != 3 || q_pos.rank() != 1) {
    throw std::invalid_argument(fmt::format(
        "[attention] q must be [s, H, d], k and v [t, KV, d], q_pos [s]; got {}, {}, {}, {}",
        shape_string(q.dims()), shape_string(k.dims()), shape_string(v.dims()),
        shape_string(q_pos.dims())));
  }
  const std::optional<int64_t> h = q.dims()[1].as_const(), kv = k.dims()[1].as_const();
  if (!h || !kv || *kv <= 0 || *h % *kv != 0) {
    throw std::invalid_argument(
        fmt::format("[attention] query heads {} must be a multiple of kv heads {}",
                    q.dims()[1].to_string(), k.dims()[1].to_string()));
  }
  Graph& g = *q.graph;
  const int64_t group = *h / *kv;
  const Expr s = q.dims()[0], t = k.dims()[0], d = q.dims()[2], rows = Expr(group) * s;
  const GraphTensor qh =
      q.split_dims(1, group).permute({1, 2, 0, 3}).reshape({*kv, rows, d});  // [KV, g*s, d]
  const GraphTensor kh = k.permute({1, 0, 2});                               // [KV, t, d]
  const GraphTensor vh = v.permute({1, 0, 2});                               // [KV, t, d]
  GraphTensor scores = qh.matmul(kh.transpose(1, 2));                        // [KV, g*s, t]
  if (scores.dtype != DType::F32) scores = scores.cast(DType::F32);
  scores = scores * scale;
  // Row r = (group member, query i) sees keys at positions <= q_pos[i].
  const GraphTensor row_pos = q_pos.expand_dim(0, group).reshape({rows});  // [g*s]
  const GraphTensor key = g.arange(t, q_pos.dtype).expand_dim(0, rows);   // [g*s, t]
  const GraphTensor visible = key.le(row_pos.expand_dim(1, t));
  const GraphTensor masked =
      where(visible, scores, g.constant(-std::numeric_limits<double>::infinity()));
  GraphTensor p = masked.softmax(-1);
  if (q.dtype != DType::F32) p = p.cast(q.dtype);
  const GraphTensor out = p.matmul(vh);  // [KV, g*s, d]
  return out.reshape({*kv, group, s, d}).permute({2, 0, 1, 3}).reshape({s, q.dims()[1], d});
}

}  // namespace luminal::nn
