// DLRM precision modes and bag layouts on the CPU reference runtime against the fp32 PyTorch
// fixtures: the parser, row-wise quantization, bf16 / int8 / tf32 graphs, jagged bags.
#include <random>

#include <gtest/gtest.h>

#include "expect_error.h"
#include "luminal/reference.h"
#include "luminal/precision.h"
#include "unit/dlrm/fixture_run.h"
#include "luminal/models/dlrm.h"
#include "test_caps.h"

namespace luminal {
namespace {

namespace fx = dlrm_fixture;
using test::expect_error;

TEST(Precision, ParsesEveryNameBack) {
  for (Precision p :
       {Precision::F32, Precision::TF32, Precision::BF16, Precision::Int8, Precision::FP8}) {
    EXPECT_EQ(parse_precision(precision_name(p)), p);
  }
  EXPECT_EQ(parse_precision("bf16"), Precision::BF16);
  EXPECT_EQ(parse_precision("fp8"), Precision::FP8);
  EXPECT_EQ(activation_dtype(Precision::Int8), DType::BF16);
  EXPECT_EQ(activation_dtype(Precision::FP8), DType::BF16);
  EXPECT_EQ(activation_dtype(Precision::TF32), DType::F32);
  EXPECT_TRUE(int8_tables(Precision::FP8) && int8_tables(Precision::Int8));
  EXPECT_FALSE(int8_tables(Precision::BF16));
}

TEST(Precision, UnknownNamesAreClearErrors) {
  for (const char* bad : {"fp16", "", "FP32", "bf16 ", "int4"}) {
    expect_error([&] { parse_precision(bad); },
                 {"[precision]", fmt::format("'{}'", bad), "fp32, tf32, tf32x3, bf16, int8 or fp8"});
  }
}

TEST(RowwiseU8, RoundTripWithinHalfAStepPerRow) {
  const int64_t rows = 50, dim = 16;
  std::mt19937 rng(3);
  std::normal_distribution<float> nd(0.0f, 2.0f);
  std::vector<float> t(rows * dim);
  for (float& v : t) v = nd(rng);
  for (int64_t j = 0; j < dim; ++j) t[7 * dim + j] = -0.25f;  // a constant row
  const nn::RowwiseU8Table q = nn::quantize_rowwise_u8(t, rows, dim);
  ASSERT_EQ(q.codes.size(), t.size());
  ASSERT_EQ(q.scale_bias.size(), size_t(2 * rows));
  for (int64_t r = 0; r < rows; ++r) {
    const auto row = std::span<const float>(t).subspan(r * dim, dim);
    const auto [lo, hi] = std::minmax_element(row.begin(), row.end());
    EXPECT_FLOAT_EQ(q.scale_bias[2 * r], (*hi - *lo) / 255.0f) << "FBGEMM scale, row " << r;
    EXPECT_EQ(q.scale_bias[2 * r + 1], *lo) << "FBGEMM bias = row min, row " << r;
    const float step = q.scale_bias[2 * r];
    for (int64_t j = 0; j < dim; ++j) {
      EXPECT_NEAR(q.value(r, j), row[j], 0.5f * step + 1e-6f) << "row " << r << " col " << j;
    }
    if (r == 7) continue;
    EXPECT_EQ(q.codes[r * dim + (lo - row.begin())], 0) << "row min -> code 0";
    EXPECT_EQ(q.codes[r * dim + (hi - row.begin())], 255) << "row max -> code 255";
  }
  for (int64_t j = 0; j < dim; ++j) EXPECT_EQ(q.value(7, j), -0.25f) << "a constant row is exact";
}

TEST(RowwiseU8, RejectsBadTables) {
  std::vector<float> t(6, 1.0f);
  expect_error([&] { nn::quantize_rowwise_u8(t, 4, 2); }, {"[quantize]", "[4, 2]"});
  t[3] = NAN;
  expect_error([&] { nn::quantize_rowwise_u8(t, 3, 2); }, {"[quantize]", "row 1"});
}

// Jagged bags against a hand-computed sum/mean: bags [0, 2), [2, 2) (empty), [2, 5), [5, 6).
TEST(JaggedBag, SumAndMeanWithAnEmptyBag) {
  const std::vector<float> table = {1, 2, 10, 20, 100, 200, 1000, 2000};  // 4 rows x 2
  const std::vector<int32_t> idx = {0, 1, 3, 2, 2, 1};
  const std::vector<int32_t> off = {0, 2, 2, 5};
  for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean}) {
    Graph g;
    const GraphTensor t = g.named_tensor("t", {4, 2});
    const GraphTensor i = g.named_tensor("i", {Expr::sym("nnz")}, DType::I32);
    const GraphTensor o = g.named_tensor("o", {4}, DType::I32);
    GraphTensor out = nn::jagged_bag(t.gather(i), o, mode);
    out.output();
    ReferenceRuntime rt(g);
    rt.set_data(t, std::span<const float>(table));
    rt.set_data(i, std::span<const int32_t>(idx));
    rt.set_data(o, std::span<const int32_t>(off));
    rt.execute({{"nnz", 6}});
    std::vector<float> want = {11, 22, 0, 0, 1200, 2400, 10, 20};
    if (mode == nn::BagMode::Mean) want = {5.5f, 11, 0, 0, 400, 800, 10, 20};
    EXPECT_EQ(rt.get_f32(out), want) << (mode == nn::BagMode::Sum ? "sum" : "mean");
  }
}

struct PrecisionCase {
  const char* fixture;
  Precision precision;
  bool jagged;
  double tol;  // max abs vs PyTorch fp32 (the targets)
  models::SparsePath sparse = models::SparsePath::Graph;
};

class DlrmPrecision : public ::testing::TestWithParam<PrecisionCase> {};

// Each mode within its tolerance and rank-preserving; bf16/int8 must also really differ from fp32
// (a graph that silently ran fp32 would pass the tolerance but fail this).
TEST_P(DlrmPrecision, MatchesPyTorchFp32WithinTolerance) {
  const PrecisionCase& pc = GetParam();
  const fx::Files f(pc.fixture);
  const models::DlrmConfig c = fx::config(f, pc.precision, pc.jagged, pc.sparse);
  Graph g;
  const models::DlrmGraph dg = models::build_dlrm(g, c);
  ReferenceRuntime rt(g);
  const std::vector<float> out = fx::run(rt, dg, c, f);
  const std::vector<float> want = fx::expected(f);
  const double diff = fx::max_abs_diff(out, want);
  EXPECT_LE(diff, pc.tol);
  EXPECT_GE(fx::spearman(out, want), 0.99);
  if (activation_dtype(pc.precision) == DType::BF16)
    EXPECT_GT(diff, 1e-6) << "bf16 math leaves a trace";
  const bool has_bf16 = std::any_of(g.nodes().begin(), g.nodes().end(),
                                    [](const Node& n) { return n.dtype == DType::BF16; });
  EXPECT_EQ(has_bf16, activation_dtype(pc.precision) == DType::BF16);
  const bool u8_tables =
      dg.inputs.tables[0].dtype == DType::U8 && dg.inputs.scale_bias.size() == c.ln_emb.size();
  EXPECT_EQ(u8_tables, pc.precision == Precision::Int8) << "int8 reads row-wise u8 tables";
}

std::vector<PrecisionCase> precision_cases() {
  std::vector<PrecisionCase> v;
  for (const char* name : {"seed", "tables8_bag3", "deep"}) {
    v.push_back({name, Precision::F32, true, 1e-5});
    v.push_back({name, Precision::TF32, false, 1e-5});  // the CPU runtime stays exact
    v.push_back({name, Precision::BF16, false, 1e-2});
    v.push_back({name, Precision::BF16, true, 1e-2});
    v.push_back({name, Precision::Int8, false, 2e-2});
    v.push_back({name, Precision::Int8, true, 2e-2});
  }
  // Every table its own bag sizes, empty bags included (make_jagged.py).
  v.push_back({"jagged", Precision::F32, true, 1e-5});
  v.push_back({"jagged", Precision::BF16, true, 1e-2});
  v.push_back({"jagged", Precision::Int8, true, 2e-2});
  // The DlrmSparse op (its decomposition on the CPU) in every table format, as one op and split
  // into the bags op and DlrmSparseFinish.
  for (const char* name : {"jagged", "deep"}) {
    for (models::SparsePath path : {models::SparsePath::Fused, models::SparsePath::Split}) {
      v.push_back({name, Precision::F32, true, 1e-5, path});
      v.push_back({name, Precision::BF16, true, 1e-2, path});
      v.push_back({name, Precision::Int8, true, 2e-2, path});
    }
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(dlrm, DlrmPrecision, ::testing::ValuesIn(precision_cases()),
                         [](const ::testing::TestParamInfo<PrecisionCase>& i) {
                           return fmt::format("{}_{}_{}_{}", i.param.fixture,
                                              precision_name(i.param.precision),
                                              i.param.jagged ? "jagged" : "uniform",
                                              models::sparse_path_name(i.param.sparse));
                         });

TEST(DlrmConfig, FusedSparsePathNeedsOffsets) {
  const fx::Files f("seed");
  models::DlrmConfig c = fx::config(f, Precision::F32, /*jagged=*/false, models::SparsePath::Fused);
  expect_error([&] { c.validate(); }, {"[dlrm]", "fused sparse path", "jagged"});
}

TEST(DlrmConfig, SparsePathRuleIsFusedWhereTheKernelIs) {
  const fx::Files f("seed");
  const models::DlrmConfig c = fx::config(f, Precision::F32, true);
  EXPECT_EQ(models::choose_sparse_path(c, *test::kernel_claiming_backend()),
            models::SparsePath::Fused);
  EXPECT_EQ(models::choose_sparse_path(c, *reference_backend()), models::SparsePath::Graph);
}

TEST(DlrmConfig, MegakernelRefusesWhatItCannotRun) {
  const fx::Files f("seed");
  EXPECT_EQ(models::mega_refusal(fx::config(f, Precision::F32, false)), "");
  EXPECT_EQ(models::mega_refusal(fx::config(f, Precision::F32, true)), "") << "jagged bags";
  models::DlrmConfig mean = fx::config(f, Precision::F32, true);
  mean.mode = nn::BagMode::Mean;
  EXPECT_EQ(models::mega_refusal(mean), "");
  const std::vector<std::pair<models::DlrmConfig, std::string>> refused = {
      {fx::config(f, Precision::BF16, false), "fp32 only"},
      {fx::config(f, Precision::F32, true, models::SparsePath::Fused), "sparse = graph"},
  };
  for (const auto& [c, why] : refused) {
    EXPECT_NE(models::mega_refusal(c).find(why), std::string::npos) << models::mega_refusal(c);
    Graph g;
    expect_error([&] { models::build_dlrm_mega(g, c); }, {"[dlrm]", why});
  }
}

// The megakernel op with PyTorch's offsets (its decomposition on the CPU) matches eager fp32.
TEST(DlrmFixture, JaggedMegaMatchesPyTorch) {
  for (const char* name : {"jagged", "seed", "tables8_bag3", "deep"}) {
    const fx::Files f(name);
    const models::DlrmConfig c = fx::config(f, Precision::F32, true);
    Graph g;
    const models::DlrmGraph dg = models::build_dlrm_mega(g, c);
    ReferenceRuntime rt(g);
    EXPECT_LE(fx::max_abs_diff(fx::run(rt, dg, c, f), fx::expected(f)), 1e-5) << name;
  }
}

// Weights are checked before anything is bound: a wrong shape names the tensor.
TEST(DlrmWeights, WrongShapeNamesTheTensor) {
  const fx::Files f("seed");
  models::DlrmConfig c = fx::config(f, Precision::Int8, false);
  c.ln_emb[2] += 1;
  Graph g;
  const models::DlrmGraph dg = models::build_dlrm(g, c);
  ReferenceRuntime rt(g);
  expect_error([&] { models::load_dlrm_weights(rt, dg, c, f.w); },
               {"[dlrm]", "emb_l.2.weight", "[31, 4]"});
}

}  // namespace
}  // namespace luminal
