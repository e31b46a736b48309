// A DLRM sharded over several CPU ranks (one process, host exchange) equals the unsharded model
// on the reference runtime: DLRM-v1 (dot) and DLRM-v2 (cross), fp32 and bf16, plans with row-wise,
// column-wise and table-wise tables, one rank; bad configurations are refused with the reason.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <random>

#include <fmt/format.h>

#include "../cpu/cpu_test_util.h"
#include "expect_error.h"
#include "luminal/reference.h"
#include "luminal/safetensors.h"
#include "luminal/sharded_dlrm.h"

namespace luminal {
namespace {

using distributed::Placement;
using models::DlrmConfig;

DlrmConfig dot_config(Precision p) {
  DlrmConfig c;
  c.ln_bot = {13, 32, 16};
  c.ln_emb = {60, 3, 200, 7};
  c.ln_top = {16 + 10, 16, 1};
  c.batch = 9;
  c.jagged = true;
  c.index_dtype = DType::I64;
  c.precision = p;
  return c;
}

DlrmConfig cross_config(Precision p) {  // i32 ids; table 2 the largest
  DlrmConfig c = models::dlrm_v2_preset("dlrm-v2-small", 0, 9);
  c.ln_emb = {100, 30, 500, 20};
  c.precision = p;
  return c;
}

void set_ids(Runtime& rt, const GraphTensor& t, const std::vector<int64_t>& v) {
  if (t.dtype == DType::I64) return rt.set_data(t, std::span<const int64_t>(v));
  const std::vector<int32_t> narrow(v.begin(), v.end());
  rt.set_data(t, std::span<const int32_t>(narrow));
}

// Random f32 weights under c's names in a safetensors file (the graph's own declarations).
std::string write_weights(const DlrmConfig& c, uint32_t seed) {
  Graph g;
  DlrmConfig f32 = c;
  f32.precision = Precision::F32;
  const models::DlrmGraph m = models::build_dlrm(g, f32);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-0.5f, 0.5f);
  std::vector<TensorData> out;
  const models::DlrmTensors& t = m.inputs;
  for (const auto* v : {&t.tables, &t.bot_w, &t.bot_b, &t.cross_v, &t.cross_w, &t.cross_b, &t.top_w, &t.top_b})
    for (const GraphTensor& x : *v) {
      std::vector<int64_t> shape;
      int64_t n = 1;
      for (const Expr& e : x.dims()) shape.push_back(*e.as_const()), n *= shape.back();
      std::vector<float> vals(static_cast<size_t>(n));
      for (float& f : vals) f = u(rng);
      out.push_back(make_tensor_data(x.node().name, shape, std::span<const float>(vals)));
    }
  const std::string path = (std::filesystem::temp_directory_path() / fmt::format("sharded_dlrm_{}_{}.safetensors",
                                                                                 ::getpid(), seed)).string();
  write_safetensors(path, out);
  return path;
}

struct Batch {
  std::vector<float> dense;
  std::vector<std::vector<int64_t>> indices, offsets;
};

Batch random_batch(const DlrmConfig& c, uint32_t seed) {
  std::mt19937 rng(seed);
  Batch b;
  b.dense = cpu_test::randoms(size_t(c.batch * c.ln_bot[0]), seed);
  for (int64_t rows : c.ln_emb) {
    std::vector<int64_t> ids, off;
    for (int64_t s = 0; s < c.batch; ++s) {
      off.push_back(int64_t(ids.size()));
      const int len = s == 0 ? 0 : 1 + int(rng() % 3);
      for (int j = 0; j < len; ++j) ids.push_back(int64_t(rng() % uint64_t(rows)));
    }
    b.indices.push_back(ids), b.offsets.push_back(off);
  }
  return b;
}

// The unsharded model on the reference runtime.
std::vector<float> reference(const DlrmConfig& c, const std::string& weights, const Batch& b) {
  Graph g;
  const models::DlrmGraph m = models::build_dlrm(g, c);
  ReferenceRuntime rt(g);
  models::load_dlrm_weights(rt, m, c, SafetensorsFile::open(weights));
  rt.set_data(m.dense_x, std::span<const float>(b.dense));
  DynMap dyn;
  for (size_t k = 0; k < b.indices.size(); ++k) {
    set_ids(rt, m.indices[k], b.indices[k]);
    set_ids(rt, m.offsets[k], b.offsets[k]);
    dyn[DlrmConfig::nnz_name(int64_t(k))] = int64_t(b.indices[k].size());
  }
  rt.execute(dyn);
  return rt.get_f32(m.out);
}

std::vector<distributed::ShardTable> tables_of(const DlrmConfig& c, const std::vector<double>& pooling) {
  std::vector<distributed::ShardTable> t;
  const int64_t es = int64_t(dtype_size(activation_dtype(c.precision)));
  for (size_t k = 0; k < c.ln_emb.size(); ++k)
    t.push_back({fmt::format("t{}", k), c.ln_emb[k], c.dim(), c.dim() * es, pooling[k]});
  return t;
}

distributed::CompileRank cpu_ranks() {
  return [](const Graph& g, int) { return cpu_test::cpu_plan(g); };
}

TEST(ShardedDlrm, EqualsTheUnshardedModelOverEveryPlacement) {
  uint32_t seed = 1;
  for (bool cross : {false, true})
    for (Precision p : {Precision::F32, Precision::BF16}) {
      const DlrmConfig c = cross ? cross_config(p) : dot_config(p);
      const std::string weights = write_weights(c, seed++);
      const Batch batch = random_batch(c, seed++);
      const std::vector<float> want = reference(c, weights, batch);
      const std::vector<distributed::ShardTable> flat = tables_of(c, std::vector<double>(c.ln_emb.size(), 1.0));
      std::vector<double> hot(c.ln_emb.size(), 1.0);
      hot[2] = 20;  // table 2 takes most lookups: column pieces
      const std::vector<distributed::ShardTable> skewed = tables_of(c, hot);
      int64_t bytes = 0;
      for (const auto& t : flat) bytes += t.bytes();
      distributed::ShardOptions narrow;
      narrow.min_column_width = 8;
      const int64_t big = flat[2].bytes();
      const struct {
        const char* name;
        std::vector<distributed::ShardTable> tables;
        std::vector<int64_t> capacity;
        Placement table2;
      } plans[] = {{"row-wise", flat, std::vector<int64_t>(3, (bytes - big) + big / 2), Placement::RowWise},
                   {"column-wise", skewed, std::vector<int64_t>(2, 10 * bytes), Placement::ColumnWise},
                   {"one rank", flat, {bytes}, Placement::TableWise}};
      for (const auto& pl : plans) {
        const distributed::ShardingPlan plan = distributed::plan_shards(pl.tables, pl.capacity, narrow);
        for (const auto& s : plan.shards)
          if (s.table == 2) ASSERT_EQ(s.placement, pl.table2) << pl.name;
        distributed::ShardedDlrm m(c, pl.tables, plan, int(pl.capacity.size()), cpu_ranks());
        m.load(SafetensorsFile::open(weights));
        const std::vector<float> got = m.run(batch.dense, batch.indices, batch.offsets);
        ASSERT_EQ(got.size(), want.size());
        double diff = 0, scale = 0;
        for (size_t i = 0; i < got.size(); ++i) {
          diff = std::max(diff, std::isfinite(got[i]) ? double(std::abs(got[i] - want[i])) : INFINITY);
          scale = std::max(scale, double(std::abs(want[i])));
        }
        const std::string what = fmt::format("{} {} {}", cross ? "cross" : "dot", precision_name(p), pl.name);
        EXPECT_LE(diff, p == Precision::F32 ? 1e-5 : 2e-2 * std::max(1.0, scale)) << what;
        EXPECT_GT(scale, 1e-3) << what << ": outputs not all ~0";
        if (pl.capacity.size() > 1) EXPECT_GT(m.exchanged_bytes(), 0) << what;
        else EXPECT_EQ(m.exchanged_bytes(), 0) << what;
      }
      std::filesystem::remove(weights);
    }
}

TEST(ShardedDlrm, RefusesWhatItCannotRun) {
  const DlrmConfig c = dot_config(Precision::F32);
  const auto tables = tables_of(c, {1, 1, 1, 1});
  const distributed::ShardingPlan plan = distributed::plan_shards(tables, {1'000'000, 1'000'000});
  DlrmConfig int8 = c;
  int8.precision = Precision::Int8;
  test::expect_error([&] { distributed::ShardedDlrm(int8, tables, plan, 2, cpu_ranks()); },
                     {"[sharded_dlrm] int8 tables are not sharded yet"});
  DlrmConfig uniform = c;
  uniform.jagged = false;
  uniform.bag = 2;
  test::expect_error([&] { distributed::ShardedDlrm(uniform, tables, plan, 2, cpu_ranks()); }, {"jagged"});
  test::expect_error([&] { distributed::ShardedDlrm(c, tables, plan, 1, cpu_ranks()); }, {"a shard on GPU 1 of 1 ranks"});
  distributed::ShardedDlrm m(c, tables, plan, 2, cpu_ranks());
  const std::string other = write_weights(dot_config(Precision::F32), 7);
  DlrmConfig wider = c;
  wider.ln_emb[1] = 4;  // the file's table 1 has 3 rows
  distributed::ShardedDlrm w(wider, tables_of(wider, {1, 1, 1, 1}),
                             distributed::plan_shards(tables_of(wider, {1, 1, 1, 1}), {1'000'000}), 1, cpu_ranks());
  test::expect_error([&] { w.load(SafetensorsFile::open(other)); }, {"'emb_l.1.weight' missing or not f32 [4, 16]"});
  test::expect_error([&] { m.run(std::vector<float>(5), {}, {}); }, {"run: dense_x of 5 values (want 117)"});
  std::filesystem::remove(other);
}

}  // namespace
}  // namespace luminal
