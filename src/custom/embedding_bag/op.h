// EmbeddingBag: PyTorch EmbeddingBag with jagged bags as one custom op, so a bag is one node
// (one gather-and-reduce kernel on CUDA, a pattern a rewrite rule can match) instead of the
// mask [B, nnz] @ rows of nn::jagged_bag.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "luminal/custom_op.h"
#include "luminal/graph.h"
#include "luminal/nn.h"

namespace luminal::custom {

/// out[b] = sum (or mean) of table[indices[j]] (times per_sample_weights[j] when weighted) for j in
/// [offsets[b], end_b), end_b = offsets[b + 1]
/// (len(indices) for the last bag unless the offsets are closed); an empty bag is zeros, a mean
/// divides by the bag length. Inputs: table [V, d] (F32, BF16 or F16), indices [nnz] (I32 or I64),
/// offsets [B] (indices' dtype), or [B + 1] when closed: the last offset ends the last bag
/// (PyTorch's include_last_offset), so the bags may cover any range of indices (one key's bags
/// in a KeyedJaggedTensor's values); weighted: a 4th input per_sample_weights [nnz] in the table's
/// dtype (sum mode only, as PyTorch). Output [B, d] in the table's dtype, accumulated in fp32. A 16-bit mean: the kernel
/// rounds sum / count once (as PyTorch); the reference rounds the sum, then the quotient (within
/// one ulp of it).
class EmbeddingBag final : public CustomOp {
 public:
  /// A bag op combining rows by `mode`.
  explicit EmbeddingBag(nn::BagMode mode, bool closed = false, bool weighted = false)
      : mode_(mode), closed_(closed), weighted_(weighted) {}
  /// "embedding_bag".
  std::string name() const override { return "embedding_bag"; }
  /// Sum or mean.
  nn::BagMode mode() const { return mode_; }
  /// True when the offsets are [B + 1] with the last bag's end (else [B], the last bag ends at nnz).
  bool closed() const { return closed_; }
  /// True when a 4th input scales each row (PyTorch's per_sample_weights; the fused DLRM kernels
  /// and rules take unweighted bags only).
  bool weighted() const { return weighted_; }
  /// The reference: nn::jagged_bag(nn::gather_rows(table, indices), offsets, mode).
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& inputs) const override;
  /// The gather-and-reduce kernel (one per d, dtypes, mode, closedness and weighting; nnz and B
  /// are read at run time).
  std::optional<CustomKernel> cuda_kernel(const KernelRequest& request) const override;
  /// The host kernel: a bag per work item, fp32 sums, rows prefetched.
  std::optional<HostKernel> host_kernel(const KernelRequest& request) const override;

 private:
  nn::BagMode mode_;
  bool closed_, weighted_;
};

/// PyTorch EmbeddingBag with jagged bags as one EmbeddingBag node: table [V, d] (F32/BF16/F16),
/// indices [nnz] and offsets [B] (both I32 or both I64; [B + 1] when `closed`) -> [B, d] in the
/// table's dtype (inputs checked by check_embedding_bag_inputs). One gather-and-reduce kernel on
/// CUDA, nn::jagged_bag on the reference. per_sample_weights (when set: [nnz] in the table's dtype,
/// sum mode) scale each row.
GraphTensor embedding_bag(const GraphTensor& table, const GraphTensor& indices,
                          const GraphTensor& offsets, nn::BagMode mode, bool closed = false,
                          const GraphTensor& per_sample_weights = {});

/// Throws "[embedding_bag] ..." naming the tensor, its dtype and shape unless table is a 2-D
/// F32/BF16/F16 tensor, indices a 1-D I32/I64 tensor and offsets a 1-D tensor of indices' dtype.
void check_embedding_bag_inputs(const GraphTensor& table, const GraphTensor& indices,
                                const GraphTensor& offsets);

/// How the kernel maps a (d, table dtype) onto the GPU (chosen by embedding_bag_layout).
struct EmbeddingBagLayout {
  int64_t vec = 1;              // table elements per load: 16 bytes where d allows
  int64_t threads_per_bag = 1;  // blockDim.x: one vector chunk of a row per thread
  int64_t bags_per_block = 1;   // blockDim.y
  int64_t column_blocks = 1;    // gridDim.y: chunks of d / vec columns
};

/// The kernel's layout for embedding dim d and table dtype dt.
EmbeddingBagLayout embedding_bag_layout(int64_t d, DType dt);

/// The generated kernel for embedding dim d over `batch` bags (offsets [batch + 1] when
/// `closed`). Parameters: table, indices, offsets (, weights when `weighted`: [nnz] in the table's
/// dtype), out, the error word, then one element count per input (custom_op.h); only the grid
/// depends on batch.
CustomKernel emit_embedding_bag(int64_t d, DType table_dtype, DType index_dtype, nn::BagMode mode,
                                int64_t batch, bool closed = false, bool weighted = false);

/// n's EmbeddingBag op when n is an unweighted bag (what the fused DLRM kernels and their rules
/// take), else nullptr.
inline const EmbeddingBag* unweighted_bag(const Node& n) {
  const auto* op = n.kind == OpKind::Custom ? dynamic_cast<const EmbeddingBag*>(n.custom.get()) : nullptr;
  return op != nullptr && !op->weighted() ? op : nullptr;
}

}  // namespace luminal::custom
