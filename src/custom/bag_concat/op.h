// BagConcat: DLRM-v2's sparse path up to the cross layers as one custom op: every table's pooled bag
// written straight beside the bottom MLP's output, x0 = [x, bag_0, ..., bag_{F-1}]. The graph builds
// x0 with a concat (a sum of padded views: every element tested against every part, 11.6 ms of a
// 2-core DLRM-v2 batch at 26 tables) after one EmbeddingBag kernel per table.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "custom/dlrm_sparse/op.h"  // TableFormat
#include "luminal/custom_op.h"
#include "luminal/nn.h"

namespace luminal::custom {

/// The shape of a BagConcat.
struct BagConcatShape {
  int64_t dim = 0;            // d: the bottom MLP's width = every table's row width
  std::vector<int64_t> rows;  // each table's rows
  nn::BagMode mode = nn::BagMode::Sum;
  DType dtype = DType::F32;        // x, dense tables and the output: F32 or BF16
  TableFormat format = TableFormat::Dense;  // RowwiseU8: U8 codes + F32 [rows, 2] scale_bias per table
  DType index_dtype = DType::I32;  // indices and offsets: I32 or I64
  bool stacked = false;  // output [B, 1 + F, d] (torch.stack / cat of [B, 1, d] parts) instead of [B, (1 + F) d]
  bool closed = false;   // offsets [B + 1] per table, the last ending the last bag (a KeyedJaggedTensor key's bags)
  bool with_x = true;    // false: the bags only, [B, F d] (no x input: it runs beside the bottom MLP)
  /// Number of tables.
  int64_t tables() const { return static_cast<int64_t>(rows.size()); }
  /// Inputs per table: 3 (table, indices, offsets), or 4 with RowwiseU8 (table, scale_bias, indices, offsets).
  int64_t inputs_per_table() const { return format == TableFormat::RowwiseU8 ? 4 : 3; }
  /// Column blocks of the output: x (when with_x), then one per table.
  int64_t parts() const { return (with_x ? 1 : 0) + tables(); }
  /// Inputs before table 0's: x, or none.
  int64_t first_table_input() const { return with_x ? 1 : 0; }
  /// Output width (1 + tables) d, or tables d without x.
  int64_t out_width() const { return parts() * dim; }
  /// Throws "[bag_concat] ..." on an inconsistent shape.
  void validate() const;
  /// B from a kernel request's input dims: x's rows, or table 0's offsets (B + 1 when closed);
  /// nullopt when the dims are not this op's inputs.
  std::optional<int64_t> batch_of(const std::vector<std::vector<int64_t>>& dims) const;
};

/// out[b] = [x[b], bag_0(b), ..., bag_{F-1}(b)] with bag_t(b) the sum (or mean) of table_t's rows
/// indices_t[j] for j in [offsets_t[b], offsets_t[b + 1]) (PyTorch EmbeddingBag; an empty bag is
/// zeros), accumulated in fp32 and rounded once to the op's dtype. Inputs: x [B, d], then per table
/// table_t [rows_t, d], indices_t [nnz_t], offsets_t [B] ([B + 1] closed). Output [B, (1 + F) d] ([B, 1 + F, d] when
/// stacked: the same bytes). Without x (BagConcatShape::with_x): no x input, out[b] = [bag_0(b), ...].
class BagConcat final : public CustomOp {
 public:
  /// Validates the shape.
  explicit BagConcat(BagConcatShape shape);
  /// "bag_concat".
  std::string name() const override { return "bag_concat"; }
  /// The reference: concat of x and one EmbeddingBag per table.
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& inputs) const override;
  /// The CUDA kernel: x and every bag in one launch (emit_bag_concat); none past 84 tables (the
  /// parameter limit) or for RowwiseU8 tables (the decomposition runs them).
  std::optional<CustomKernel> cuda_kernel(const KernelRequest& request) const override;
  /// The host kernel: a sample per work item, rows prefetched a few samples ahead.
  std::optional<HostKernel> host_kernel(const KernelRequest& request) const override;
  /// The shape it was built for.
  const BagConcatShape& shape() const { return shape_; }

 private:
  BagConcatShape shape_;
};

/// The generated kernel over `batch` samples. Parameters: x (when with_x), per table (table, indices,
/// offsets), out, the error word, then every input's element count (custom_op.h); only the grid
/// depends on batch.
CustomKernel emit_bag_concat(const BagConcatShape& s, int64_t batch);
/// How many threads share one bag's rows at this batch: 4 for dense tables up to batch 4096 (where
/// the longest bag's chain of loads bounds the kernel), else 1.
int64_t bag_splits(const BagConcatShape& s, int64_t batch);

/// x0 = [x, bag_0, ..., bag_{F-1}] as one BagConcat node; tables[k], indices[k], offsets[k] per table;
/// with scale_bias (one F32 [rows_k, 2] per table) the tables are RowwiseU8 codes; closed: offsets [B + 1].
GraphTensor bag_concat(const GraphTensor& x, const std::vector<GraphTensor>& tables,
                       const std::vector<GraphTensor>& indices, const std::vector<GraphTensor>& offsets,
                       nn::BagMode mode, bool stacked = false, const std::vector<GraphTensor>& scale_bias = {},
                       bool closed = false);

/// [bag_0, ..., bag_{F-1}] as one BagConcat node without x ([B, F d], or [B, F, d] stacked; dtype F32
/// or BF16, dense tables of that dtype): the sparse half of x0 = [x, bags], which reads nothing of
/// the bottom MLP and so runs beside it.
GraphTensor bags_concat(const std::vector<GraphTensor>& tables, const std::vector<GraphTensor>& indices,
                        const std::vector<GraphTensor>& offsets, nn::BagMode mode, DType dtype, bool stacked = false,
                        const std::vector<GraphTensor>& scale_bias = {}, bool closed = false);

}  // namespace luminal::custom
