// CausalAttention: causal grouped-query attention (nn::causal_attention) as one custom op, so a
// decode step reads only the filled part of the KV cache instead of its whole capacity.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "luminal/custom_op.h"

namespace luminal::custom {

/// out[i, h] = sum_{j <= q_pos[i]} softmax_j(scale * q[i, h] . k[j, h / g]) v[j, h / g] with
/// g = H / KV. Inputs: q [s, H, d], k and v [t, KV, d] (same float dtype), q_pos [s] (I32 or I64).
/// Output [s, H, d] in q's dtype ([s, KV, H / KV, d], the same memory, when `grouped`: the node
/// shape nn::causal_attention's final copy has, so the rule can replace that copy). Softmax and
/// accumulation in fp32.
class CausalAttention final : public CustomOp {
 public:
  /// `scale` multiplies the scores (1 / sqrt(d) for Llama).
  explicit CausalAttention(double scale, bool grouped = false) : scale_(scale), grouped_(grouped) {}
  /// "causal_attention".
  std::string name() const override { return "causal_attention"; }
  /// nn::causal_attention on the inputs (the semantics).
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& inputs) const override;
  /// The fused kernel (f32 / bf16, d 64 or 128, group <= 8), else nullopt.
  std::optional<CustomKernel> cuda_kernel(const KernelRequest& request) const override;
  /// The score scale.
  double scale() const { return scale_; }

 private:
  double scale_;
  bool grouped_;
};

/// The shape a kernel is generated for (s and t are read from the element counts at run time).
struct AttentionShape {
  int64_t heads = 0, kv_heads = 0, head_dim = 0;
  DType dtype = DType::F32, pos_dtype = DType::I32;
};

/// Why the kernel cannot run this shape, or "".
std::string why_unsupported(const AttentionShape& s);

/// Key splits for s queries over t keys (grid.z): enough blocks to fill the GPU at decode, 1 when
/// s * KV blocks already do (prefill).
int64_t attention_splits(int64_t queries, int64_t kv_heads, int64_t keys, int sm_count);

/// Workspace bytes of a launch with `splits` splits: s * KV counters, then the partials.
int64_t attention_workspace_bytes(const AttentionShape& s, int64_t queries, int64_t splits);

/// The kernel for a shape (8 warps per block when `split`, else up to 16); grid.x (s), grid.z
/// (splits) and the workspace are set by the caller. Throws "[causal_attention] unsupported:
/// <why>" for an unsupported shape.
CustomKernel emit_causal_attention(const AttentionShape& s, double scale, bool split);

}  // namespace luminal::custom
