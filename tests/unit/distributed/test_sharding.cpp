// The sharding planner on the CPU: placements (table-, row- and column-wise), memory accounting
// against each GPU's capacity, every table covered exactly once, determinism, and refusals with
// the sizes; MLPerf DLRM-v2's tables (the full fp32 and 4x-rows bf16 sets) on 1-4 H200s.
#include <gtest/gtest.h>

#include <map>
#include <numeric>

#include "expect_error.h"
#include "luminal/distributed.h"
#include "luminal/models/dlrm.h"

namespace luminal {
namespace {

using distributed::Placement;
using distributed::ShardingPlan;
using distributed::ShardTable;
using ::luminal::test::expect_error;

constexpr int64_t GB = 1'000'000'000;

ShardTable table(const std::string& name, int64_t rows, int64_t dim, int64_t elem_bytes, double pooling = 1) {
  return {name, rows, dim, dim * elem_bytes, pooling};
}

// Each table's shards tile rows x columns exactly once; per-GPU bytes and loads add up and fit.
void expect_consistent(const ShardingPlan& p, const std::vector<ShardTable>& tables,
                       const std::vector<int64_t>& capacity) {
  std::vector<int64_t> bytes(capacity.size(), 0);
  std::map<int64_t, int64_t> covered;  // table -> rows x columns covered
  for (const distributed::Shard& s : p.shards) {
    ASSERT_GE(s.device, 0);
    ASSERT_LT(size_t(s.device), capacity.size());
    const ShardTable& t = tables[size_t(s.table)];
    ASSERT_TRUE(0 <= s.row_begin && s.row_begin < s.row_end && s.row_end <= t.rows) << t.name;
    ASSERT_TRUE(0 <= s.col_begin && s.col_begin < s.col_end && s.col_end <= t.dim) << t.name;
    if (s.placement == Placement::ColumnWise) EXPECT_EQ(s.col_begin % 8, 0) << t.name;
    EXPECT_EQ(s.bytes, (s.row_end - s.row_begin) * (t.row_bytes * (s.col_end - s.col_begin) / t.dim)) << t.name;
    covered[s.table] += (s.row_end - s.row_begin) * (s.col_end - s.col_begin);
    bytes[size_t(s.device)] += s.bytes;
  }
  for (size_t t = 0; t < tables.size(); ++t)
    EXPECT_EQ(covered[int64_t(t)], tables[t].rows * tables[t].dim) << tables[t].name << " covered once";
  EXPECT_EQ(bytes, p.device_bytes);
  for (size_t g = 0; g < capacity.size(); ++g) EXPECT_LE(p.device_bytes[g], capacity[g]) << "GPU " << g;
}

std::vector<ShardTable> mlperf_tables(int64_t elem_bytes, int64_t row_scale) {
  const models::DlrmConfig c = models::dlrm_v2_preset("dlrm-v2", 0, 1);
  const std::vector<int64_t> hots = models::dlrm_v2_hots("dlrm-v2");
  std::vector<ShardTable> t;
  for (size_t k = 0; k < c.ln_emb.size(); ++k)
    t.push_back(table(c.table_names.at(k), c.ln_emb[k] * row_scale, c.dim(), elem_bytes, double(hots[k])));
  return t;
}

TEST(Sharding, OneGpuWithRoomHoldsEveryTableWhole) {
  const std::vector<ShardTable> t{table("a", 1000, 16, 4, 3), table("b", 50, 16, 4), table("c", 7, 8, 2)};
  const ShardingPlan p = distributed::plan_shards(t, {1'000'000});
  ASSERT_EQ(p.shards.size(), 3u);
  for (const auto& s : p.shards) EXPECT_EQ(s.placement, Placement::TableWise);
  EXPECT_EQ(p.device_bytes[0], 1000 * 64 + 50 * 64 + 7 * 16);
  expect_consistent(p, t, {1'000'000});
}

TEST(Sharding, EqualTablesSpreadEvenly) {
  std::vector<ShardTable> t;
  for (int i = 0; i < 8; ++i) t.push_back(table("t" + std::to_string(i), 1000, 16, 4, 2));
  const ShardingPlan p = distributed::plan_shards(t, {GB, GB, GB, GB});
  expect_consistent(p, t, {GB, GB, GB, GB});
  for (int64_t b : p.device_bytes) EXPECT_EQ(b, 2 * 1000 * 64);
}

TEST(Sharding, ATableLargerThanAnyGpuGoesRowWiseInProportionToFreeMemory) {
  const std::vector<ShardTable> t{table("huge", 4000, 10, 10)};  // 400 kB on GPUs of 300 kB and 100 kB
  const std::vector<int64_t> cap{300'000, 100'000};
  const ShardingPlan p = distributed::plan_shards(t, cap);
  expect_consistent(p, t, cap);
  ASSERT_EQ(p.shards.size(), 2u);
  EXPECT_EQ(p.shards[0].placement, Placement::RowWise);
  EXPECT_EQ(p.shards[0].row_end, 3000);  // 3:1, contiguous ranges in GPU order
  EXPECT_EQ(p.shards[1].row_begin, 3000);
  EXPECT_EQ(p.shards[1].device, 1);
}

TEST(Sharding, ATableThatFitsNoGpuWholeAnyMoreIsSplitByRows) {
  // 7 goes first (largest), then 6; the second 6 finds 3 and 4 free: rows over both.
  const std::vector<ShardTable> t{table("a", 6, 1, 1), table("b", 6, 1, 1), table("c", 7, 1, 1)};
  const ShardingPlan p = distributed::plan_shards(t, {10, 10});
  expect_consistent(p, t, {10, 10});
  int row_wise = 0;
  for (const auto& s : p.shards) row_wise += s.placement == Placement::RowWise;
  EXPECT_EQ(row_wise, 2);
  EXPECT_EQ(p.device_bytes[0] + p.device_bytes[1], 19);
}

TEST(Sharding, AHotTableGoesColumnWiseOnDistinctGpus) {
  // "hot" has 9 of the 12 lookups per sample: 3x a GPU's fair share over 4 GPUs, so 3 column ranges.
  const std::vector<ShardTable> t{table("hot", 1000, 128, 2, 9), table("a", 1000, 128, 2, 1),
                                  table("b", 1000, 128, 2, 1), table("c", 1000, 128, 2, 1)};
  const std::vector<int64_t> cap(4, GB);
  const ShardingPlan p = distributed::plan_shards(t, cap);
  expect_consistent(p, t, cap);
  std::vector<int> devices;
  for (const auto& s : p.shards)
    if (s.table == 0) {
      EXPECT_EQ(s.placement, Placement::ColumnWise);
      devices.push_back(s.device);
    }
  ASSERT_EQ(devices.size(), 3u);
  std::sort(devices.begin(), devices.end());
  EXPECT_EQ(std::unique(devices.begin(), devices.end()), devices.end()) << "column ranges on distinct GPUs";
  // Balanced: no GPU gathers more than 1.5x the mean.
  const double mean = std::accumulate(p.device_load.begin(), p.device_load.end(), 0.0) / 4;
  for (double l : p.device_load) EXPECT_LE(l, 1.5 * mean);
}

TEST(Sharding, MlperfDlrmV2FullTables) {
  const int64_t h200 = 139 * GB - 9 * GB;  // free memory less the dense part and workspace
  const std::vector<ShardTable> fp32 = mlperf_tables(4, 1), bf16x4 = mlperf_tables(2, 4);
  int64_t fp32_bytes = 0;
  for (const auto& t : fp32) fp32_bytes += t.bytes();
  EXPECT_EQ(fp32_bytes, 204'184'588LL * 512);  // the 104.5 GB
  const ShardingPlan one = distributed::plan_shards(fp32, {h200});
  expect_consistent(one, fp32, {h200});
  expect_error([&] { distributed::plan_shards(bf16x4, {h200}); },
               {"[shard] the tables need 209.09 GB", "1 GPU holds 130.00 GB"});
  for (int gpus : {2, 4}) {
    const std::vector<int64_t> cap(size_t(gpus), h200);
    for (const auto* t : {&fp32, &bf16x4}) {
      const ShardingPlan p = distributed::plan_shards(*t, cap);
      expect_consistent(p, *t, cap);
      const ShardingPlan again = distributed::plan_shards(*t, cap);
      ASSERT_EQ(again.shards.size(), p.shards.size()) << "deterministic";
      for (size_t i = 0; i < p.shards.size(); ++i) {
        EXPECT_EQ(again.shards[i].device, p.shards[i].device);
        EXPECT_EQ(again.shards[i].col_begin, p.shards[i].col_begin);
      }
      // t_20 (100 of the 214 lookups) is cut by columns; lookups stay within 1.5x the mean per GPU.
      const double mean = std::accumulate(p.device_load.begin(), p.device_load.end(), 0.0) / gpus;
      for (double l : p.device_load) EXPECT_LE(l, 1.5 * mean) << gpus << " GPUs";
      EXPECT_EQ(p.describe(*t, cap).size(), t->size() + size_t(gpus));
    }
  }
}

TEST(Sharding, DescribeNamesPlacementsAndTotals) {
  const std::vector<ShardTable> t{table("huge", 4000, 10, 10), table("small", 10, 8, 4, 2.5)};
  const std::vector<int64_t> cap{300'000, 200'000};
  const std::vector<std::string> lines = distributed::plan_shards(t, cap).describe(t, cap);
  ASSERT_EQ(lines.size(), 4u);
  EXPECT_NE(lines[0].find("huge: 4000 x 10, 0.00 GB, 1 lookups/sample: row-wise rows [0, "), std::string::npos)
      << lines[0];
  EXPECT_NE(lines[1].find("small: 10 x 8, 0.00 GB, 2.5 lookups/sample: table-wise on GPU "), std::string::npos)
      << lines[1];
  EXPECT_NE(lines[2].find("GPU 0: "), std::string::npos);
  EXPECT_NE(lines[3].find("% of the lookup bytes"), std::string::npos);
}

TEST(Sharding, BadInputIsRefusedWithTheReason) {
  const std::vector<ShardTable> t{table("a", 10, 8, 4)};
  expect_error([&] { distributed::plan_shards(t, {}); }, {"[shard] no GPUs"});
  expect_error([&] { distributed::plan_shards(t, {100, 0}); }, {"[shard] GPU 1 has 0 bytes"});
  expect_error([&] { distributed::plan_shards({table("z", 0, 8, 4)}, {100}); }, {"[shard] table 'z' is 0 x 8"});
  expect_error([&] { distributed::plan_shards(t, {300}); }, {"[shard] the tables need 0.00 GB", "1 GPU holds"});
  distributed::ShardOptions o;
  o.min_column_width = 12;
  expect_error([&] { distributed::plan_shards(t, {1000}, o); }, {"min_column_width", "12"});
}

}  // namespace
}  // namespace luminal
