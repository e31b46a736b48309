// Sharding a recommendation model's embedding tables over the GPUs of one host (TorchRec's
// table-wise, row-wise and column-wise placements): the planner, a pure function of the tables'
// sizes and access frequencies and each GPU's free memory. Execution over NCCL builds on it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "luminal/nn.h"
#include "luminal/tensor.h"

namespace luminal::distributed {

/// One embedding table as the planner sees it.
struct ShardTable {
  std::string name;
  int64_t rows = 0, dim = 0;
  int64_t row_bytes = 0;  // bytes per row as stored (dim * element size, + 8 for row-wise int8)
  double pooling = 1.0;   // mean lookups per sample (a multi-hot bag's length): its access frequency
  /// rows * row_bytes.
  int64_t bytes() const { return rows * row_bytes; }
};

/// How a table is cut.
enum class Placement {
  TableWise,   // the whole table on one GPU
  RowWise,     // row ranges on several GPUs (each pools its rows; partial sums are added)
  ColumnWise,  // column ranges on several GPUs (each pools its columns of every row)
};

/// "table-wise", "row-wise" or "column-wise".
const char* placement_name(Placement p);

/// One piece of a table on one GPU: rows [row_begin, row_end) x columns [col_begin, col_end).
struct Shard {
  int64_t table = 0;
  Placement placement = Placement::TableWise;
  int device = 0;
  int64_t row_begin = 0, row_end = 0, col_begin = 0, col_end = 0;
  int64_t bytes = 0;  // stored bytes on the device
  double load = 0;    // bytes gathered per sample (pooling x the shard's share of a row's bytes)
};

/// Planner settings.
struct ShardOptions {
  int64_t min_column_width = 32;  // a column shard is at least this wide (and a multiple of 8)
};

/// Where every table goes: shards in table order (a table's pieces in row / column order).
struct ShardingPlan {
  std::vector<Shard> shards;
  std::vector<int64_t> device_bytes;  // table bytes per GPU
  std::vector<double> device_load;    // bytes gathered per sample per GPU
  /// Lines for --stats: one per table (its placement and GPUs), then one per GPU (bytes of its
  /// capacity, share of the lookups).
  std::vector<std::string> describe(const std::vector<ShardTable>& tables,
                                    const std::vector<int64_t>& capacity) const;
};

/// Places `tables` on GPUs with `capacity[g]` bytes free for tables each. Deterministic: tables
/// larger than any GPU go row-wise over every GPU (rows in proportion to free memory); a table
/// with more than a GPU's fair share of the lookups goes column-wise; the rest table-wise, largest
/// first (by their share of the total bytes or lookups, whichever is larger), each on the GPU where
/// it leaves the smallest such share. Throws "[shard] ..." with the sizes when they do not fit.
ShardingPlan plan_shards(const std::vector<ShardTable>& tables, const std::vector<int64_t>& capacity,
                         const ShardOptions& options = {});

/// Rows a shard stores: its row range, plus one zero row for a row-wise shard (where the ids
/// outside its range are pointed, so a bag's length, and a mean's divisor, stay the whole bag's).
int64_t shard_rows(const Shard& s);

/// Copies shard s of a row-major [rows, dim] table of elem_bytes-wide elements into `out`
/// (shard_rows(s) x (col_end - col_begin), the zero row last). Throws on a size mismatch.
void copy_shard(const Shard& s, const ShardTable& t, std::span<const std::byte> table, int64_t elem_bytes,
                std::span<std::byte> out);

/// The pooled [B, col_end - col_begin] of one shard: PyTorch EmbeddingBag over shard_table (as
/// copy_shard lays it out) for the table's indices and offsets (closed: [B + 1]); a row-wise shard
/// reads id - row_begin for the ids in its range and its zero row for the others.
GraphTensor shard_bag(const Shard& s, const GraphTensor& shard_table, const GraphTensor& indices,
                      const GraphTensor& offsets, nn::BagMode mode, bool closed = false);

/// One table's pooled [B, dim] from its shards' pooled outputs (`shards` and `pooled` in plan order):
/// row-wise partials added, column ranges concatenated. What the exchange delivers to the GPU
/// running a sample's dense part.
GraphTensor combine_shards(const std::vector<Shard>& shards, const std::vector<GraphTensor>& pooled);

/// "52.06 GB" (decimal units, as the MLPerf table sizes are quoted).
std::string gigabytes(int64_t bytes);

}  // namespace luminal::distributed
