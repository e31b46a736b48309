// DlrmMega: the whole DLRM forward pass as one custom op (one CUDA kernel, generated per shape).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "custom/dlrm_mega/plan.h"
#include "luminal/custom_op.h"

namespace luminal::custom {

/// One-kernel DLRM forward. Inputs, in order: dense_x [B, ln_bot[0]] f32, indices_0..k-1
/// (i32/i64: [B * bag], or [nnz_k] when jagged), offsets_0..k-1 [B] of the index dtype (jagged
/// only), emb_0..k-1 [V_k, d] f32, bottom (weight (out, in), bias (out)) pairs, top pairs.
/// Output: [B, 1] f32. Bags sum or average their rows (PyTorch EmbeddingBag: jagged bag b is
/// indices[offsets[b], offsets[b + 1]), the last ending at nnz_k; an empty bag is zeros). The
/// decomposition is dlrm_mega_forward (nn layers).
class DlrmMega final : public CustomOp {
 public:
  /// Validates the shape ("[dlrm] ..." errors).
  explicit DlrmMega(DlrmMegaShape shape);
  /// "dlrm_mega".
  std::string name() const override { return "dlrm_mega"; }
  /// dlrm_mega_forward on the inputs (checked against the shape).
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& inputs) const override;
  /// The generated megakernel, or nullopt when why_unsupported() is nonempty for these shapes.
  std::optional<CustomKernel> cuda_kernel(const KernelRequest& request) const override;
  /// The shape it was built for.
  const DlrmMegaShape& config() const { return config_; }

 private:
  DlrmMegaShape config_;
};

/// Why the megakernel cannot run this shape on this device (e.g. a layer wider than 64), or "".
std::string why_unsupported(const DlrmMegaShape& c, const DeviceCaps& caps);

/// Why the megakernel cannot run on these concrete inputs (dims, dtypes in DlrmMega's input order;
/// the batch is taken from dense_x), or "" when it can.
std::string why_unsupported(const DlrmMegaShape& c, const std::vector<std::vector<int64_t>>& input_dims,
                            const std::vector<DType>& input_dtypes, const DeviceCaps& caps);

/// The generated kernel for a supported config (throws "[dlrm_mega] unsupported: <why>" otherwise).
/// Tuning values of 0 are chosen automatically; others force a candidate (see plan.h).
CustomKernel emit_dlrm_mega(const DlrmMegaShape& c, const DeviceCaps& caps, MegaTuning tuning = {});

}  // namespace luminal::custom
