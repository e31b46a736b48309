// Pooling a sharded table equals pooling the whole table: every placement the planner makes
// (row-wise with the zero row, column-wise, table-wise), sum and mean, open and closed (KJT)
// offsets, on the reference runtime and the CPU backend (outputs poisoned), f32 and bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include <fmt/format.h>

#include "../cpu/cpu_test_util.h"
#include "custom/embedding_bag/op.h"
#include "expect_error.h"
#include "luminal/distributed.h"
#include "luminal/reference.h"

namespace luminal {
namespace {

using distributed::Placement;
using distributed::Shard;
using distributed::ShardTable;

struct Bags {
  std::vector<int64_t> ids, offsets;
};

// B bags of 0..4 ids in [0, rows); closed: offsets [B + 1] inside values that start and end with
// ids of other keys (out of range here: read, they would raise).
Bags random_bags(int64_t batch, int64_t rows, bool closed, uint32_t seed) {
  std::mt19937 rng(seed);
  Bags b;
  if (closed) b.ids = {rows + 3, -2};
  for (int64_t i = 0; i < batch; ++i) {
    b.offsets.push_back(int64_t(b.ids.size()));
    const int len = i == 0 ? 0 : int(rng() % 5);
    for (int j = 0; j < len; ++j) b.ids.push_back(int64_t(rng() % uint64_t(rows)));
  }
  if (closed) b.offsets.push_back(int64_t(b.ids.size())), b.ids.push_back(rows + 9);
  return b;
}

std::vector<std::byte> bytes_of(const std::vector<float>& v, DType dt) {
  std::vector<std::byte> out;
  if (dt == DType::F32) {
    out.resize(v.size() * 4);
    std::memcpy(out.data(), v.data(), out.size());
  } else {
    std::vector<bf16> h(v.begin(), v.end());
    out.resize(h.size() * 2);
    std::memcpy(out.data(), h.data(), out.size());
  }
  return out;
}

// The whole table's bags and the sharded ones in one graph; max |sharded - whole| on `runtime`.
double sharded_vs_whole(const std::vector<Shard>& shards, const ShardTable& t, DType dt, nn::BagMode mode,
                        bool closed, bool cpu, uint32_t seed) {
  const int64_t B = 9, es = int64_t(dtype_size(dt));
  const std::vector<float> values = cpu_test::randoms(size_t(t.rows * t.dim), seed);
  const std::vector<std::byte> table = bytes_of(values, dt);
  const Bags bags = random_bags(B, t.rows, closed, seed + 1);
  Graph g;
  const GraphTensor whole = g.named_tensor("table", {t.rows, t.dim}, dt);
  const GraphTensor ids = g.named_tensor("ids", {int64_t(bags.ids.size())}, DType::I64);
  const GraphTensor offsets = g.named_tensor("offsets", {int64_t(bags.offsets.size())}, DType::I64);
  std::vector<GraphTensor> shard_tables, pooled;
  for (size_t i = 0; i < shards.size(); ++i) {
    const Shard& s = shards[i];
    shard_tables.push_back(g.named_tensor(fmt::format("shard_{}", i),
                                          {distributed::shard_rows(s), s.col_end - s.col_begin}, dt));
    pooled.push_back(distributed::shard_bag(s, shard_tables.back(), ids, offsets, mode, closed));
  }
  const GraphTensor want = custom::embedding_bag(whole, ids, offsets, mode, closed).cast(DType::F32).output();
  const GraphTensor got = distributed::combine_shards(shards, pooled).cast(DType::F32).output();
  std::unique_ptr<Runtime> rt;
  if (cpu) rt = cpu_test::cpu_plan(g);
  else rt = std::make_unique<ReferenceRuntime>(g);
  rt->set_bytes(whole, table);
  for (size_t i = 0; i < shards.size(); ++i) {
    const Shard& s = shards[i];
    std::vector<std::byte> piece(size_t(distributed::shard_rows(s) * (s.col_end - s.col_begin) * es));
    distributed::copy_shard(s, t, table, es, piece);
    rt->set_bytes(shard_tables[i], piece);
  }
  rt->set_data(ids, std::span<const int64_t>(bags.ids));
  rt->set_data(offsets, std::span<const int64_t>(bags.offsets));
  rt->execute({});
  const std::vector<float> a = rt->get_f32(got), b = rt->get_f32(want);
  EXPECT_EQ(a.size(), size_t(B * t.dim));
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::isfinite(a[i]) ? double(std::abs(a[i] - b[i])) : INFINITY);
    scale = std::max(scale, double(std::abs(b[i])));
  }
  EXPECT_GT(scale, 0.1) << "bags of random rows, not zeros";
  return diff;
}

// The shards of table 0 in plans that put it row-, column- and table-wise.
std::vector<std::pair<Placement, std::vector<Shard>>> placements(const ShardTable& t) {
  std::vector<std::pair<Placement, std::vector<Shard>>> out;
  const int64_t third = t.bytes() / 3 + t.row_bytes;  // three GPUs, none holding the table
  const ShardTable cold{"cold", t.rows, t.dim, t.row_bytes, 1};
  const ShardTable hot{t.name, t.rows, t.dim, t.row_bytes, 20};
  const struct {
    std::vector<ShardTable> tables;
    std::vector<int64_t> capacity;
  } cases[] = {{{t}, {third, third, third}}, {{hot, cold, cold, cold}, std::vector<int64_t>(4, 100 * t.bytes())},
               {{t, cold}, {10 * t.bytes(), 10 * t.bytes()}}};
  for (const auto& c : cases) {
    std::vector<Shard> mine;
    for (const Shard& s : distributed::plan_shards(c.tables, c.capacity).shards)
      if (s.table == 0) mine.push_back(s);
    out.emplace_back(mine[0].placement, mine);
  }
  return out;
}

TEST(ShardBags, EveryPlacementPoolsAsTheWholeTable) {
  uint32_t seed = 10;
  for (DType dt : {DType::F32, DType::BF16}) {
    const ShardTable t{"t", 50, 64, 64 * int64_t(dtype_size(dt)), 1};  // 64 columns: two column pieces
    const auto ps = placements(t);
    ASSERT_EQ(ps[0].first, Placement::RowWise);
    ASSERT_EQ(ps[0].second.size(), 3u);
    ASSERT_EQ(ps[1].first, Placement::ColumnWise);
    ASSERT_GE(ps[1].second.size(), 2u);
    ASSERT_EQ(ps[2].first, Placement::TableWise);
    for (const auto& [placement, shards] : ps)
      for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
        for (bool closed : {false, true})
          for (bool cpu : {false, true}) {
            // bf16: the whole table's bag rounds once, the row-wise sum of rounded partials twice.
            const double tol = dt == DType::BF16 ? 4e-2 : 1e-5;
            EXPECT_LE(sharded_vs_whole(shards, t, dt, mode, closed, cpu, seed++), tol)
                << distributed::placement_name(placement) << (mode == nn::BagMode::Mean ? " mean" : " sum")
                << (closed ? " closed" : "") << (cpu ? " cpu" : " reference") << " " << dtype_name(dt);
          }
  }
}

TEST(ShardBags, CopyShardLaysOutRowsColumnsAndTheZeroRow) {
  const ShardTable t{"t", 4, 4, 4, 1};  // u8 elements 0..15
  std::vector<std::byte> table(16);
  for (int i = 0; i < 16; ++i) table[size_t(i)] = std::byte(i);
  const Shard rows{0, Placement::RowWise, 0, 1, 3, 0, 4, 8, 0};
  std::vector<std::byte> out(size_t(distributed::shard_rows(rows) * 4), std::byte{0xff});
  distributed::copy_shard(rows, t, table, 1, out);
  const std::vector<int> want_rows{4, 5, 6, 7, 8, 9, 10, 11, 0, 0, 0, 0};
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(int(out[i]), want_rows[i]) << i;
  const Shard cols{0, Placement::ColumnWise, 1, 0, 4, 2, 4, 8, 0};
  std::vector<std::byte> c(8);
  distributed::copy_shard(cols, t, table, 1, c);
  const std::vector<int> want_cols{2, 3, 6, 7, 10, 11, 14, 15};
  for (size_t i = 0; i < c.size(); ++i) EXPECT_EQ(int(c[i]), want_cols[i]) << i;
  std::vector<std::byte> small(3);
  test::expect_error([&] { distributed::copy_shard(cols, t, table, 1, small); }, {"[shard] copy_shard", "want 8"});
}

}  // namespace
}  // namespace luminal
