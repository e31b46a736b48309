// DlrmSparse on the CPU reference runtime: the decomposition against a hand-checked case, the
// plain-loop oracle (jagged and empty bags, sum/mean, dense f32/bf16 and row-wise u8 tables,
// i32/i64 indices, a dynamic nnz that changes between executes) and a PyTorch EmbeddingBag fixture;
// bad inputs are clear errors.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>

#include "custom/dlrm_sparse/test_util.h"
#include "expect_error.h"
#include "luminal/reference.h"
#include "luminal/safetensors.h"
#include "test_caps.h"

namespace luminal {
namespace {

using custom::TableFormat;
using ::luminal::test::expect_error;
using sparse_test::Case;
using Floats = std::vector<float>;

double max_diff(const Floats& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double m = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    m = std::max(m, std::abs(double(got[i]) - want[i]));
  }
  return m;
}

// max |got - want| / max(1, |want|): f32 rounding on the large row-wise u8 products.
double max_rel_diff(const Floats& got, const std::vector<double>& want) {
  EXPECT_EQ(got.size(), want.size());
  double m = 0;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    m = std::max(m, std::abs(double(got[i]) - want[i]) / std::max(1.0, std::abs(want[i])));
  }
  return m;
}

Floats run_cpu(const Case& c, bool dynamic, bool split = false) {
  Graph g;
  const sparse_test::Bound b = sparse_test::build_for(g, c, dynamic, split);
  ReferenceRuntime rt(g);
  sparse_test::set_inputs(rt, b, c);
  rt.execute(dynamic ? sparse_test::dyn_of(c) : DynMap{});
  return rt.get_f32(b.out);
}

TEST(DlrmSparse, HandChecked) {
  // d = 2, one table rows (1,2), (3,4), (5,6); B = 3, offsets [0, 0, 3], indices [0, 2, 2, 1]:
  // bags: sample 0 empty, sample 1 rows 0+2+2 = (11, 14), sample 2 row 1 = (3, 4).
  Case c{sparse_test::shape(3, 2, {3}),
         {1, 0, 0, 1, 2, -1},
         {{1, 2, 3, 4, 5, 6}},
         {{}},
         {{0, 2, 2, 1}},
         {{0, 0, 3}}};
  // out = [x, x . bag]: (1,0).(0,0) = 0; (0,1).(11,14) = 14; (2,-1).(3,4) = 2.
  EXPECT_EQ(run_cpu(c, false), (Floats{1, 0, 0, 0, 1, 14, 2, -1, 2}));
  // Mean: sample 1 bag (11/3, 14/3) -> 14/3; the empty bag stays 0.
  c.s.mode = nn::BagMode::Mean;
  const Floats m = run_cpu(c, true);
  ASSERT_EQ(m.size(), 9u);
  EXPECT_FLOAT_EQ(m[5], 14.f / 3.f);
  EXPECT_EQ(m[2], 0.f);
  EXPECT_EQ(m[8], 2.f);
}

// torchrec's pair order, by hand: x = 2 and bags 3, 5, 7 (d = 1, one id each) give the pairs
// (0,1) 6, (0,2) 10, (0,3) 14, (1,2) 15, (1,3) 21, (2,3) 35 in that (triu_indices) order, and
// 6, 10, 15, 14, 21, 35 in the lower order; closed offsets read only their bags' ids.
TEST(DlrmSparse, HandCheckedUpperPairOrderAndClosedOffsets) {
  Case c{sparse_test::shape(1, 1, {1, 1, 1}), {2}, {{3}, {5}, {7}}, {{}, {}, {}}, {{0}, {0}, {0}}, {{0}, {0}, {0}}};
  EXPECT_EQ(run_cpu(c, false), (Floats{2, 6, 10, 15, 14, 21, 35}));
  c.s.pairs = nn::PairOrder::Upper;
  EXPECT_EQ(run_cpu(c, false), (Floats{2, 6, 10, 14, 15, 21, 35}));
  // Closed: each table's one id sits at position 1 of [junk, id, junk], offsets [1, 2].
  c.s.closed = true;
  c.indices = {{9, 0, -4}, {1, 0, 5}, {0, 0, 0}};
  c.offsets = {{1, 2}, {1, 2}, {1, 2}};
  EXPECT_EQ(run_cpu(c, true), (Floats{2, 6, 10, 14, 15, 21, 35}));
  c.offsets[2] = {1, 1};  // table 2's bag empty: its pairs (0,3), (1,3), (2,3) are 0
  EXPECT_EQ(run_cpu(c, true), (Floats{2, 6, 10, 0, 15, 0, 0}));
}

// Closed offsets and the upper pair order over every mode, format and dtype, against the loops.
TEST(DlrmSparse, ClosedOffsetsAndUpperPairsMatchLoops) {
  uint32_t seed = 300;
  for (bool closed : {false, true})
    for (nn::PairOrder pairs : {nn::PairOrder::Lower, nn::PairOrder::Upper})
      for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
        for (TableFormat f : {TableFormat::Dense, TableFormat::RowwiseU8})
          for (DType dt : {DType::F32, DType::BF16}) {
            if (f == TableFormat::RowwiseU8 && dt == DType::BF16) continue;
            custom::DlrmSparseShape s = sparse_test::shape(5, 4, {7, 3, 11}, mode, f, dt,
                                                           seed % 2 ? DType::I64 : DType::I32);
            s.closed = closed, s.pairs = pairs;
            const Case c = sparse_test::random_case(s, seed++, 4);
            const double tol = dt == DType::BF16 ? 0.5 : (f == TableFormat::RowwiseU8 ? 1e-2 : 1e-5);
            const std::string what = fmt::format("case seed {}", seed - 1);
            EXPECT_LE(max_diff(run_cpu(c, false), sparse_test::loops(c)), tol) << what << " static";
            EXPECT_LE(max_diff(run_cpu(c, true), sparse_test::loops(c)), tol) << what << " dynamic nnz";
            if (pairs == nn::PairOrder::Lower)
              EXPECT_LE(max_diff(run_cpu(c, true, /*split=*/true), sparse_test::loops(c)), tol) << what << " split";
          }
}

struct Variant {
  nn::BagMode mode;
  TableFormat format;
  DType dtype, index;
};

// Every mode x format x dtype x index dtype the op supports, against the loop oracle.
TEST(DlrmSparse, AllVariantsMatchLoops) {
  uint32_t seed = 1;
  for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
    for (TableFormat f : {TableFormat::Dense, TableFormat::RowwiseU8})
      for (DType dt : {DType::F32, DType::BF16})
        for (DType it : {DType::I32, DType::I64}) {
          if (f == TableFormat::RowwiseU8 && dt == DType::BF16) continue;  // same tables as f32
          const Case c = sparse_test::random_case(
              sparse_test::shape(5, 4, {7, 3, 11}, mode, f, dt, it), seed++, 4);
          const std::vector<double> want = sparse_test::loops(c);
          // bf16 output: relative rounding of 2^-8 on values up to ~|d * 4 * 4|.
          const double tol = dt == DType::BF16 ? 0.5 : (f == TableFormat::RowwiseU8 ? 1e-2 : 1e-5);
          const std::string what = fmt::format("case seed {}", seed - 1);
          EXPECT_LE(max_diff(run_cpu(c, false), want), tol) << what << " static";
          EXPECT_LE(max_diff(run_cpu(c, true), want), tol) << what << " dynamic nnz";
          EXPECT_LE(max_diff(run_cpu(c, true, /*split=*/true), want), tol) << what << " split";
        }
}

// The two-kernel form: the bags op's rows hold zeros where x goes, the pairs among bags, the zero
// pad, then the pooled bags; the finish op's output equals the one-op output (padding included).
TEST(DlrmSparse, SplitFormMatchesTheOneOpForm) {
  uint32_t seed = 300;
  for (DType dt : {DType::F32, DType::BF16})
    for (int64_t align : {1, 8}) {
      custom::DlrmSparseShape s = sparse_test::shape(6, 4, {7, 3, 11}, nn::BagMode::Mean,
                                                     TableFormat::Dense, dt, DType::I64);
      s.col_align = align;
      const Case c = sparse_test::random_case(s, seed++, 3);
      const Floats one = run_cpu(c, true), two = run_cpu(c, true, /*split=*/true);
      EXPECT_EQ(one.size(), two.size());
      std::vector<double> want(one.begin(), one.end());
      EXPECT_LE(max_diff(two, want), dt == DType::BF16 ? 0.02 : 1e-6) << dtype_name(dt) << align;
      // The bags op alone: x columns and the pairs (i, 0) are zeros, the pooled bags follow.
      custom::DlrmSparseShape bs = s;
      bs.bags_only = true;
      Graph g;
      const sparse_test::Bound b = sparse_test::build_for(g, c, false);
      const std::vector<GraphTensor> tables(b.in.begin() + 1, b.in.end());
      GraphTensor bags = custom_op(std::make_shared<custom::DlrmSparse>(bs), tables).output();
      ReferenceRuntime rt(g);
      sparse_test::set_inputs(rt, b, c);
      rt.execute();
      const Floats rows = rt.get_f32(bags);
      ASSERT_EQ(rows.size(), size_t(s.batch * bs.row_width()));
      const Floats full = rt.get_f32(b.out);
      for (int64_t r = 0; r < s.batch; ++r) {
        const float* row = rows.data() + r * bs.row_width();
        for (int64_t e = 0; e < s.dim; ++e) EXPECT_EQ(row[e], 0.f);
        for (int64_t i = 1; i <= s.tables(); ++i) EXPECT_EQ(row[s.dim + i * (i - 1) / 2], 0.f);
        // Pair (2, 1) = bag_1 . bag_0 as the one op computes it.
        EXPECT_NEAR(row[s.dim + 2], full[size_t(r * s.padded_width() + s.dim + 2)], 1e-4);
        for (int64_t e = s.out_width(); e < s.padded_width(); ++e) EXPECT_EQ(row[e], 0.f);
      }
    }
}

// col_align pads each output row with zero columns up to a multiple of col_align: MLPerf's 479
// -> 480 with 8 (the oracle pads too; a wrong pad value or a shifted row fails).
TEST(DlrmSparse, ColumnPaddingIsZeros) {
  uint32_t seed = 100;
  for (int64_t align : {1, 2, 4, 8, 16})
    for (DType dt : {DType::F32, DType::BF16}) {
      custom::DlrmSparseShape s = sparse_test::shape(6, 4, {7, 3, 11}, nn::BagMode::Sum,
                                                     TableFormat::Dense, dt, DType::I32);
      s.col_align = align;
      const Case c = sparse_test::random_case(s, seed++, 3);
      const int64_t w = s.out_width();  // 4 + 6 = 10
      ASSERT_EQ(s.padded_width(), (w + align - 1) / align * align);
      const Floats got = run_cpu(c, true);
      ASSERT_EQ(got.size(), size_t(s.batch * s.padded_width())) << align;
      EXPECT_LE(max_diff(got, sparse_test::loops(c)), dt == DType::BF16 ? 0.5 : 1e-5) << align;
      for (int64_t b = 0; b < s.batch; ++b)
        for (int64_t k = w; k < s.padded_width(); ++k)
          EXPECT_EQ(got[size_t(b * s.padded_width() + k)], 0.f) << b << " " << k;
    }
  custom::DlrmSparseShape mlperf = sparse_test::shape(2, 128, std::vector<int64_t>(26, 5));
  mlperf.col_align = 8;
  EXPECT_EQ(mlperf.out_width(), 479);
  EXPECT_EQ(mlperf.padded_width(), 480);
  for (int64_t bad : {0, 3, 32, -8}) {
    custom::DlrmSparseShape s = sparse_test::shape(2, 8, {5});
    s.col_align = bad;
    expect_error([&] { custom::DlrmSparse{s}; }, {"[dlrm_sparse]", "col_align"});
  }
}

// Reads tensor `name` of f as doubles (f32, u8 and i64 fixtures).
std::vector<double> fixture_values(const SafetensorsFile& f, const std::string& name) {
  const SafeTensor& t = f.at(name);
  const size_t n = t.data.size() / dtype_size(t.dtype);
  std::vector<double> v(n);
  for (size_t i = 0; i < n; ++i) {
    const std::byte* p = t.data.data() + i * dtype_size(t.dtype);
    if (t.dtype == DType::F32) {
      float x;
      std::memcpy(&x, p, 4);
      v[i] = x;
    } else if (t.dtype == DType::I64) {
      int64_t x;
      std::memcpy(&x, p, 8);
      v[i] = double(x);
    } else {
      v[i] = double(std::to_integer<uint8_t>(*p));
    }
  }
  return v;
}

// PyTorch-pinned: tests/fixtures/dlrm_sparse.safetensors
// (tests/fixtures/make_dlrm_sparse_fixture.py: torch.nn.EmbeddingBag sum / mean with empty bags,
// FBGEMM row-wise u8 bags).
TEST(DlrmSparse, MatchesPyTorchFixture) {
  const std::string path = std::string(LUMINAL_FIXTURES) + "/dlrm_sparse.safetensors";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "no fixture " << path;
  const SafetensorsFile f = SafetensorsFile::open(path);
  for (const char* name : {"sum", "mean", "rowwise"}) {
    const std::string p = std::string(name) + ".";
    const bool u8 = std::string(name) == "rowwise";
    const SafeTensor& x = f.at(p + "x");
    std::vector<int64_t> rows;
    for (int t = 0; f.find(p + "table_" + std::to_string(t)); ++t)
      rows.push_back(f.at(p + "table_" + std::to_string(t)).shape[0]);
    Case c{sparse_test::shape(x.shape[0], x.shape[1], rows,
                              std::string(name) == "mean" ? nn::BagMode::Mean : nn::BagMode::Sum,
                              u8 ? TableFormat::RowwiseU8 : TableFormat::Dense, DType::F32,
                              DType::I64),
           {},
           {},
           {},
           {},
           {}};
    for (double v : fixture_values(f, p + "x")) c.x.push_back(float(v));
    for (size_t t = 0; t < rows.size(); ++t) {
      const std::string k = std::to_string(t);
      const std::vector<double> tab = fixture_values(f, p + "table_" + k);
      c.tables.emplace_back(tab.begin(), tab.end());
      std::vector<double> sb =
          u8 ? fixture_values(f, p + "scale_bias_" + k) : std::vector<double>{};
      c.sb.emplace_back(sb.begin(), sb.end());
      const std::vector<double> idx = fixture_values(f, p + "indices_" + k),
                                off = fixture_values(f, p + "offsets_" + k);
      c.indices.emplace_back(idx.begin(), idx.end());
      c.offsets.emplace_back(off.begin(), off.end());
    }
    const std::vector<double> want = fixture_values(f, p + "out");
    EXPECT_LE(max_rel_diff(run_cpu(c, true), want), 1e-6) << name;
    EXPECT_LE(max_rel_diff(run_cpu(c, false), sparse_test::loops(c)), 1e-6) << name << " vs loops";
  }
}

TEST(DlrmSparse, BatchOneAndNoIndicesAtAll) {
  Case c = sparse_test::random_case(sparse_test::shape(1, 3, {4, 4}), 7);
  c.indices = {{2, 1, 3}, {}};
  c.offsets = {{0}, {0}};
  EXPECT_LE(max_diff(run_cpu(c, true), sparse_test::loops(c)), 1e-5);
}

TEST(DlrmSparse, DynamicNnzChangesBetweenExecutes) {
  const custom::DlrmSparseShape s = sparse_test::shape(4, 8, {50, 9}, nn::BagMode::Mean);
  Graph g;
  const sparse_test::Bound b = sparse_test::build(g, s, {Expr::sym("nnz0"), Expr::sym("nnz1")});
  ReferenceRuntime rt(g);
  for (uint32_t seed : {11u, 12u, 13u}) {
    const Case c = sparse_test::random_case(s, seed, 2 + int(seed) % 5);
    sparse_test::set_inputs(rt, b, c);
    rt.execute(sparse_test::dyn_of(c));
    EXPECT_LE(max_diff(rt.get_f32(b.out), sparse_test::loops(c)), 1e-5) << seed;
  }
}

// Runs one execute of c expecting an error that mentions every key.
void expect_run_error(const Case& c, const std::vector<std::string>& keys) {
  expect_error([&] { run_cpu(c, true); }, keys);
}

TEST(DlrmSparse, BadIndicesAndOffsetsAreErrors) {
  const Case good = sparse_test::random_case(sparse_test::shape(4, 2, {5, 6}), 3, 3);
  Case c = good;
  c.indices[1].push_back(6);  // table_1 has 6 rows; the last bag grows by one out-of-range row
  // The reference's scratch inputs carry the outer inputs' names.
  expect_run_error(c, {"dlrm_sparse", "index 6 out of range [0, 6)", "'indices_1'"});
  c = good;
  c.indices[0].push_back(-1);
  expect_run_error(c, {"dlrm_sparse", "index -1 out of range"});
  c = good;
  c.offsets[0][3] = int64_t(c.indices[0].size()) + 1;  // past nnz
  expect_run_error(c, {"dlrm_sparse", "out of range", "'offsets_0'"});
  c = good;
  c.offsets[1][1] = -2;
  expect_run_error(c, {"dlrm_sparse", "index -2 out of range", "'offsets_1'"});
  c = good;
  c.indices[0] = {0, 1, 2, 3};
  c.offsets[0] = {0, 3, 1, 4};  // decreasing
  expect_run_error(c, {"dlrm_sparse", "[gather] index 1 out of range [0, 1)"});
}

TEST(DlrmSparse, BadShapesAndDtypesNameTheInput) {
  const custom::DlrmSparseShape s = sparse_test::shape(4, 8, {50, 9});
  auto declare = [&](DType idx_dt, int64_t rows1, int64_t off_len) {
    Graph g;
    std::vector<GraphTensor> in{g.named_tensor("x", {4, 8})};
    for (int t = 0; t < 2; ++t) {
      in.push_back(g.named_tensor(fmt::format("e{}", t), {t ? rows1 : 50, 8}));
      in.push_back(
          g.named_tensor(fmt::format("i{}", t), {Expr::sym("n")}, t ? idx_dt : DType::I32));
      in.push_back(g.named_tensor(fmt::format("o{}", t), {t ? off_len : 4}, DType::I32));
    }
    custom_op(std::make_shared<custom::DlrmSparse>(s), in);
  };
  declare(DType::I32, 9, 4);  // the good case builds
  expect_error([&] { declare(DType::F32, 9, 4); }, {"[dlrm_sparse]", "'indices_1'", "f32", "i32"});
  expect_error([&] { declare(DType::I64, 9, 4); }, {"[dlrm_sparse]", "'indices_1'", "i64"});
  expect_error([&] { declare(DType::I32, 10, 4); },
               {"[dlrm_sparse]", "'table_1'", "[10, 8]", "[9, 8]"});
  expect_error([&] { declare(DType::I32, 9, 5); }, {"[dlrm_sparse]", "'offsets_1'", "[5]"});
  Graph g;
  expect_error(
      [&] {
        custom_op(std::make_shared<custom::DlrmSparse>(s), {g.named_tensor("x", {4, 8})});
      },
      {"[dlrm_sparse]", "1 inputs, expected 7"});
}

TEST(DlrmSparse, KernelSourceIgnoresNnzAndChecksInputs) {
  const custom::DlrmSparse op(sparse_test::shape(4, 16, {50, 9}, nn::BagMode::Mean,
                                                 TableFormat::RowwiseU8, DType::BF16, DType::I64));
  auto dims = [](int64_t nnz0, int64_t nnz1) {
    return std::vector<std::vector<int64_t>>{{4, 16}, {50, 16}, {50, 2}, {nnz0}, {4},
                                             {9, 16}, {9, 2},   {nnz1},  {4}};
  };
  const std::vector<DType> dts{DType::BF16, DType::U8,  DType::F32, DType::I64, DType::I64,
                               DType::U8,   DType::F32, DType::I64, DType::I64};
  const auto a = test::cuda_kernel_for(op, dims(3, 0), dts), b = test::cuda_kernel_for(op, dims(700, 12), dts);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->source, b->source);  // a new nnz reuses the compiled kernel
  EXPECT_EQ(a->entry, b->entry);
  EXPECT_NE(a->source.find("long long n_indices_1"), std::string::npos) << a->source;
  auto bad_dts = dts;
  bad_dts[3] = DType::I32;
  EXPECT_FALSE(test::cuda_kernel_for(op, dims(3, 0), bad_dts));
  auto bad_dims = dims(3, 0);
  bad_dims[5] = {10, 16};
  EXPECT_FALSE(test::cuda_kernel_for(op, bad_dims, dts));
  EXPECT_FALSE(test::cuda_kernel_for(op, {{4, 16}}, {DType::BF16}));
}

TEST(DlrmSparse, ShapeValidation) {
  expect_error([] { custom::DlrmSparse(sparse_test::shape(0, 8, {5})); },
               {"[dlrm_sparse]", "batch"});
  expect_error([] { custom::DlrmSparse(sparse_test::shape(2, 8, {})); },
               {"[dlrm_sparse]", "table"});
  expect_error(
      [] {
        custom::DlrmSparse(sparse_test::shape(2, 8, {5, 0}));
      },
      {"[dlrm_sparse]", "table_1"});
  expect_error(
      [] {
        custom::DlrmSparse(
            sparse_test::shape(2, 8, {5}, nn::BagMode::Sum, TableFormat::Dense, DType::F16));
      },
      {"[dlrm_sparse]", "f16"});
  expect_error(
      [] {
        custom::DlrmSparse(sparse_test::shape(2, 8, {5}, nn::BagMode::Sum, TableFormat::Dense,
                                              DType::F32, DType::U8));
      },
      {"[dlrm_sparse]", "index dtype", "u8"});
  expect_error(
      [] {
        custom::DlrmSparseShape s = sparse_test::shape(2, 8, {5});
        s.pairs = nn::PairOrder::Upper;
        s.bags_only = true;
        custom::DlrmSparse{s};
      },
      {"[dlrm_sparse]", "bags_only", "lower pair order"});
  EXPECT_EQ(sparse_test::shape(2, 16, std::vector<int64_t>(26, 5)).out_width(), 16 + 27 * 26 / 2);
  // Too wide for the kernel's register budget: no kernel, the decomposition runs.
  EXPECT_NE(custom::why_unsupported(sparse_test::shape(2, 1024, {5})).find("accumulators"),
            std::string::npos);
  EXPECT_EQ(custom::why_unsupported(sparse_test::shape(2, 512, {5})), "");
  const custom::DlrmSparse wide(sparse_test::shape(2, 1024, {5}));
  EXPECT_FALSE(test::cuda_kernel_for(wide, {{2, 1024}, {5, 1024}, {3}, {2}},
                                {DType::F32, DType::F32, DType::I32, DType::I32}));
}

}  // namespace
}  // namespace luminal
