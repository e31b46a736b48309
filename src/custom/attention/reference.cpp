// CausalAttention's decomposition: nn::causal_attention itself, so the op and the graph it
// replaces cannot drift apart.
#include <stdexcept>

#include <fmt/format.h>

#include "custom/attention/op.h"
#include "luminal/nn.h"

namespace luminal::custom {

GraphTensor CausalAttention::decompose(Graph&, const std::vector<GraphTensor>& inputs) const {
  if (inputs.size() != 4)
    throw std::invalid_argument(
        fmt::format("[causal_attention] {} inputs, expected 4 (q, k, v, q_pos)", inputs.size()));
  const GraphTensor &q = inputs[0], &k = inputs[1], &v = inputs[2], &pos = inputs[3];
  if (!is_float(q.dtype) || k.dtype != q.dtype || v.dtype != q.dtype)
    throw std::invalid_argument(
        fmt::format("[causal_attention] q, k, v must share one float dtype, got {}, {}, {}",
                    dtype_name(q.dtype), dtype_name(k.dtype), dtype_name(v.dtype)));
  if (pos.dtype != DType::I32 && pos.dtype != DType::I64)
    throw std::invalid_argument(
        fmt::format("[causal_attention] q_pos must be i32 or i64, got {}", dtype_name(pos.dtype)));
  // contiguous(): a custom node's result must be a whole node (the decomposition ends in views).
  const GraphTensor out = nn::causal_attention(q, k, v, pos, scale_).contiguous();
  if (!grouped_) return out;
  const int64_t kv = *k.dims()[1].as_const(), group = *q.dims()[1].as_const() / kv;
  return out.reshape({q.dims()[0], kv, group, q.dims()[2]});  // a view: out is contiguous
}

}  // namespace luminal::custom
