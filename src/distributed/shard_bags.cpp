// Pooling a sharded table (include/luminal/distributed.h): each shard's bags over its rows or
// columns, and the pieces put back together. On several GPUs each shard_bag runs where its shard
// lives and the pieces travel by all-to-all; on one device (tests) it is a plain graph.
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "custom/embedding_bag/op.h"
#include "luminal/distributed.h"

namespace luminal::distributed {

int64_t shard_rows(const Shard& s) { return s.row_end - s.row_begin + (s.placement == Placement::RowWise ? 1 : 0); }

void copy_shard(const Shard& s, const ShardTable& t, std::span<const std::byte> table, int64_t elem_bytes,
                std::span<std::byte> out) {
  const int64_t width = s.col_end - s.col_begin, rows = shard_rows(s);
  if (int64_t(table.size()) != t.rows * t.dim * elem_bytes || int64_t(out.size()) != rows * width * elem_bytes)
    throw std::invalid_argument(fmt::format("[shard] copy_shard: table of {} bytes (want {}), shard of {} (want {})",
                                            table.size(), t.rows * t.dim * elem_bytes, out.size(),
                                            rows * width * elem_bytes));
  const size_t row_out = size_t(width * elem_bytes);
  for (int64_t r = s.row_begin; r < s.row_end; ++r)
    std::memcpy(out.data() + size_t(r - s.row_begin) * row_out,
                table.data() + size_t((r * t.dim + s.col_begin) * elem_bytes), row_out);
  if (s.placement == Placement::RowWise)  // the zero row
    std::fill(out.end() - std::ptrdiff_t(row_out), out.end(), std::byte{0});
}

GraphTensor shard_bag(const Shard& s, const GraphTensor& shard_table, const GraphTensor& indices,
                      const GraphTensor& offsets, nn::BagMode mode, bool closed) {
  GraphTensor ids = indices;
  if (s.placement == Placement::RowWise) {
    Graph& g = *indices.graph;
    const GraphTensor zero_row = g.constant(double(s.row_end - s.row_begin), indices.dtype);
    const GraphTensor local = indices - g.constant(double(s.row_begin), indices.dtype);
    ids = where(indices.lt(double(s.row_begin)), zero_row, where(indices.lt(double(s.row_end)), local, zero_row));
  }
  return custom::embedding_bag(shard_table, ids, offsets, mode, closed);
}

GraphTensor combine_shards(const std::vector<Shard>& shards, const std::vector<GraphTensor>& pooled) {
  if (shards.empty() || shards.size() != pooled.size())
    throw std::invalid_argument(fmt::format("[shard] combine_shards: {} shards, {} pooled pieces", shards.size(),
                                            pooled.size()));
  if (shards[0].placement == Placement::RowWise) {
    GraphTensor sum = pooled[0];
    for (size_t i = 1; i < pooled.size(); ++i) sum = sum + pooled[i];
    return sum;
  }
  return pooled.size() == 1 ? pooled[0] : concat(pooled, 1);
}

}  // namespace luminal::distributed
