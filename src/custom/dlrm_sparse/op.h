// DlrmSparse: the DLRM sparse path as one custom op: every table's embedding bags plus the dot
// interaction, written straight into the top MLP's input.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "luminal/custom_op.h"
#include "luminal/nn.h"

namespace luminal::custom {

/// The column alignment of the op's output (8 bf16 = 16 bytes): an odd K made cuBLASLt pick
/// unaligned kernels (35 us instead of ~5 us for the MLPerf shape's first top layer on the H200),
/// so the DLRM model pads its first top weight to match (and its bottom input at bf16/int8).
inline constexpr int64_t kSparseColAlign = 8;

/// How an embedding table is stored.
enum class TableFormat : uint8_t {
  Dense,      // table_k [rows_k, d] in the op's dtype (F32 or BF16)
  RowwiseU8,  // table_k [rows_k, d] U8 codes plus scale_bias_k [rows_k, 2] F32:
              // value = code * scale + bias (FBGEMM's row-wise 8-bit tables)
};

/// The shape of a DLRM sparse path.
struct DlrmSparseShape {
  int64_t batch = 0;          // B (with dynamic_batch: its typical value)
  // B is the dynamic dim `batch_symbol`: the kernel reads it at run time (from offsets_0's
  // length), so one compiled kernel serves every batch.
  bool dynamic_batch = false;
  std::string batch_symbol = "batch";
  int64_t dim = 0;            // d: embedding dim = bottom MLP output width
  std::vector<int64_t> rows;  // vocab size of each table
  nn::BagMode mode = nn::BagMode::Sum;
  TableFormat format = TableFormat::Dense;
  DType dtype = DType::F32;        // x, dense tables and the output: F32 or BF16
  DType index_dtype = DType::I32;  // indices and offsets: I32 or I64
  int64_t col_align = 1;  // output width rounded up to this (1, 2, 4, 8, 16); pad columns are 0
  // Offsets [B + 1], the last one ending the last bag (a KeyedJaggedTensor key's bags inside the
  // shared values: indices outside every bag are never read), else [B] with the last bag ending
  // at nnz.
  bool closed = false;
  nn::PairOrder pairs = nn::PairOrder::Lower;  // the output's pair order (Upper: torchrec's DLRM)
  // The bags kernel of the two-kernel path (DlrmSparseFinish completes it): no x input, so it can
  // run beside the bottom MLP; columns [0, d) and the pairs with x are zeros, and each output row
  // continues with the pooled bags (tables * d values, rounded like T).
  bool bags_only = false;
  /// B as the inputs' first dim: the dynamic batch symbol, or `batch`.
  Expr batch_dim() const;
  /// Entries of each offsets input: B, or B + 1 when closed.
  Expr offsets_dim() const { return closed ? batch_dim() + 1 : batch_dim(); }
  /// Number of tables.
  int64_t tables() const { return static_cast<int64_t>(rows.size()); }
  /// Output width d + n(n-1)/2 with n = 1 + tables.
  int64_t out_width() const;
  /// The output's width: out_width() rounded up to col_align (the extra columns are zeros, so a
  /// matmul reading the output gets an aligned K).
  int64_t padded_width() const { return (out_width() + col_align - 1) / col_align * col_align; }
  /// Inputs per table: 3 (table, indices, offsets), or 4 with RowwiseU8 (table, scale_bias,
  /// indices, offsets).
  int64_t inputs_per_table() const { return format == TableFormat::RowwiseU8 ? 4 : 3; }
  /// Elements per output row: padded_width(), plus tables * d pooled values when bags_only.
  int64_t row_width() const { return padded_width() + (bags_only ? tables() * dim : 0); }
  /// Inputs of the op: x (unless bags_only), then every table's.
  int64_t input_count() const { return (bags_only ? 0 : 1) + tables() * inputs_per_table(); }
  /// Throws "[dlrm_sparse] ..." on an inconsistent shape.
  void validate() const;
};

/// out[b] = [x[b], Z[b, i, j] for the pairs in `pairs` order (Lower: i > j row-major)] with
/// Z = T T^T and T = [x[b], bag_0(b), ..., bag_{k-1}(b)]; bag_t(b) sums (or averages) the rows
/// table_t[indices_t[j]] for j in [offsets_t[b], offsets_t[b + 1]) (PyTorch EmbeddingBag: offsets
/// are bag starts, the last bag ends at len(indices_t) unless closed, an empty bag is zeros).
/// Accumulates in fp32; a BF16 op rounds each bag to bf16 (as a bf16 PyTorch model's EmbeddingBag
/// output). Inputs: x [B, d]; then per table t: table_t, (scale_bias_t,) indices_t [nnz_t],
/// offsets_t [offsets_dim()]. Output: [B, padded_width()] in `dtype`, columns past out_width() zero.
class DlrmSparse final : public CustomOp {
 public:
  /// Validates the shape.
  explicit DlrmSparse(DlrmSparseShape shape);
  /// "dlrm_sparse".
  std::string name() const override { return "dlrm_sparse"; }
  /// The reference: embedding bags from ordinary ops, then nn::dot_interaction.
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& inputs) const override;
  /// The fused kernel for these inputs (nnz_t may change between calls without a new kernel).
  std::optional<CustomKernel> cuda_kernel(const KernelRequest& request) const override;
  /// The host kernel (any shape but bags_only): a sample per work item, rows prefetched.
  std::optional<HostKernel> host_kernel(const KernelRequest& request) const override;
  /// The shape it was built for.
  const DlrmSparseShape& shape() const { return shape_; }

 private:
  DlrmSparseShape shape_;
};

/// The second kernel of the two-kernel sparse path: out[b] = the bags op's row (its first
/// padded_width() columns) with x[b] in columns [0, d) and the pairs (i, 0) = x[b] . bag_{i-1}(b)
/// computed in fp32 from the pooled bags. Inputs: x [B, d], bags [B, row_width()] (a bags_only
/// DlrmSparse of the same shape). Output: [B, padded_width()] in `dtype`, as DlrmSparse's.
class DlrmSparseFinish final : public CustomOp {
 public:
  /// `shape` is the bags op's (bags_only is implied).
  explicit DlrmSparseFinish(DlrmSparseShape shape);
  /// "dlrm_sparse_finish".
  std::string name() const override { return "dlrm_sparse_finish"; }
  /// The reference: the bags op's row with x and the x pairs written in, by slices and a concat.
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& inputs) const override;
  /// The kernel for these inputs.
  std::optional<CustomKernel> cuda_kernel(const KernelRequest& request) const override;

 private:
  DlrmSparseShape shape_;
};

/// The finish kernel (one warp per sample).
CustomKernel emit_dlrm_sparse_finish(const DlrmSparseShape& s);

/// How the kernel maps a shape onto the GPU (chosen by dlrm_sparse_layout; printed in tests).
struct DlrmSparseLayout {
  int64_t vec = 1;  // table elements per load (16 bytes where d allows)
  int64_t lanes_per_row =
      1;                   // lanes sharing one gathered row; a warp gathers 32 / this rows at once
  int64_t row_stride = 0;  // elements per feature row of T in shared memory (floats; bf16 if mma)
  bool mma = false;        // bf16 T and tensor-core pairs (BF16 op, at most 32 features)
  bool tiled = false;      // pairs by 4x4 register tiles (even d, >= 8 features), else one per lane
  int64_t warp_floats = 0;  // shared floats per warp (= per sample in flight)
  int64_t warps = 1;        // warps (samples) per block
};

/// The kernel's layout for a shape.
DlrmSparseLayout dlrm_sparse_layout(const DlrmSparseShape& s);

/// Why the kernel cannot run this shape (e.g. too much shared memory per sample), or "".
std::string why_unsupported(const DlrmSparseShape& s);

/// The generated kernel (throws "[dlrm_sparse] unsupported: <why>" for an unsupported shape).
/// Parameters: the op's inputs, out, the error word, then one long long element count per input.
CustomKernel emit_dlrm_sparse(const DlrmSparseShape& s);

}  // namespace luminal::custom
