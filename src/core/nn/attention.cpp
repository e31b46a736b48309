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

// q [s, H, d] -> [KV, g, s, d]; k, v [t, KV, d] -> [KV, g, t, d] as a stride-0 expand (the kv
// heads are read in place, never repeated). scores [KV, g, s, t] -> softmax -> @ v.
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
  const Expr s = q.dims()[0], t = k.dims()[0], d = q.dims()[2];
  const GraphTensor qh = q.split_dims(1, group).permute({1, 2, 0, 3});  // [KV, g, s, d]
  const GraphTensor kh = k.permute({1, 0, 2}).expand_dim(1, group);     // [KV, g, t, d]
  const GraphTensor vh = v.permute({1, 0, 2}).expand_dim(1, group);     // [KV, g, t, d]
  GraphTensor scores = qh.matmul(kh.transpose(2, 3));                   // [KV, g, s, t]
  if (scores.dtype != DType::F32) scores = scores.cast(DType::F32);
  scores = scores * scale;
  const GraphTensor key = g.arange(t, q_pos.dtype).expand_dim(0, s);  // [s, t]
  const GraphTensor visible = key.le(q_pos.expand_dim(1, t));
  const GraphTensor masked =
      where(visible, scores, g.constant(-std::numeric_limits<double>::infinity()));
  GraphTensor p = masked.softmax(-1);
  if (q.dtype != DType::F32) p = p.cast(q.dtype);
  const GraphTensor out = p.matmul(vh);  // [KV, g, s, d]
  return out.permute({2, 0, 1, 3}).reshape({s, q.dims()[1], d});
}

}  // namespace luminal::nn
