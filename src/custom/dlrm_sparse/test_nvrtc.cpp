// NVRTC compile checks of the generated DlrmSparse kernel for sm_90 (no GPU needed): every
// format x dtype x index dtype x mode at the seed, Kaggle and MLPerf-v1 shapes compiles, with no
// stack frame and no register spills (ptxas -v).
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <string>
#include <vector>

#include "custom/dlrm_sparse/op.h"
#include "custom/dlrm_sparse/test_util.h"
#include "nvrtc/nvrtc_compile.h"
#include "test_caps.h"

namespace luminal::custom {
namespace {

// Criteo Kaggle's 26 vocab sizes (dlrm repo, day_fea_count of the Kaggle set).
const std::vector<int64_t> kKaggleRows{
    1460, 583,   10131227, 2202608, 305,  24,   12517, 633,     3,  93145, 5683,   8351593, 3194,
    27,   14992, 5461306,  10,      5652, 2173, 4,     7046547, 18, 15,    286181, 105,     142572};

// MLPerf-v1 (Criteo 1TB, 40M-row cap): tables above 2^31 elements at d = 128.
std::vector<int64_t> mlperf_rows() {
  std::vector<int64_t> r(26, 40'000'000);
  for (size_t i = 0; i < r.size(); i += 3) r[i] = 1000 + int64_t(i);
  return r;
}

void expect_compiles(const DlrmSparseShape& s, bool finish = false) {
  ASSERT_EQ(why_unsupported(s), "");
  const CustomKernel k = finish ? emit_dlrm_sparse_finish(s) : emit_dlrm_sparse(s);
  ASSERT_TRUE(test::compiles_without_spills(k.source, k.entry));
  EXPECT_NE(k.source.find("extern \"C\" __global__"), std::string::npos);
  EXPECT_LE(k.shared_bytes, 200u * 1024);
}

// Every variant of one (batch, d, rows).
void expect_all_variants_compile(int64_t batch, int64_t dim, const std::vector<int64_t>& rows) {
  for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
    for (TableFormat f : {TableFormat::Dense, TableFormat::RowwiseU8})
      for (DType dt : {DType::F32, DType::BF16})
        for (DType it : {DType::I32, DType::I64}) {
          SCOPED_TRACE(fmt::format(
              "d {} {} {} {} {}", dim, mode == nn::BagMode::Sum ? "sum" : "mean",
              f == TableFormat::Dense ? "dense" : "rowwise", dtype_name(dt), dtype_name(it)));
          expect_compiles(sparse_test::shape(batch, dim, rows, mode, f, dt, it));
        }
}

TEST(DlrmSparseNvrtc, SeedShape) { expect_all_variants_compile(2048, 4, {10, 20, 30}); }

TEST(DlrmSparseNvrtc, KaggleShape) { expect_all_variants_compile(2048, 16, kKaggleRows); }

TEST(DlrmSparseNvrtc, MlperfShape) { expect_all_variants_compile(2048, 128, mlperf_rows()); }

TEST(DlrmSparseNvrtc, OddDimsAndBatches) {
  expect_compiles(sparse_test::shape(1, 3, {5, 7}));  // scalar loads, batch 1
  expect_compiles(sparse_test::shape(1000, 24, {5, 7, 9}, nn::BagMode::Mean,  // partial last block
                                     TableFormat::Dense, DType::BF16, DType::I64));
  expect_compiles(sparse_test::shape(16384, 256, std::vector<int64_t>(8, 100)));
}

// Padded outputs (col_align 8: MLPerf 479 -> 480, Kaggle 367 -> 368; 16).
TEST(DlrmSparseNvrtc, PaddedOutputs) {
  for (int64_t align : {8, 16}) {
    DlrmSparseShape m = sparse_test::shape(2048, 128, mlperf_rows(), nn::BagMode::Sum,
                                           TableFormat::Dense, DType::BF16, DType::I32);
    m.col_align = align;
    expect_compiles(m);
    EXPECT_NE(emit_dlrm_sparse(m).source.find(fmt::format("WP = {}", m.padded_width())),
              std::string::npos);
    DlrmSparseShape k = sparse_test::shape(2048, 16, kKaggleRows);
    k.col_align = align;
    expect_compiles(k);
  }
}

// The two-kernel path: the bags kernel (no x) and the finish kernel, every variant at the
// production shapes (16-byte loads of the pooled bags there), and a finish on scalar loads.
TEST(DlrmSparseNvrtc, SplitKernels) {
  for (auto [dim, rows] : {std::pair{int64_t{16}, kKaggleRows}, {int64_t{128}, mlperf_rows()}})
    for (DType dt : {DType::F32, DType::BF16})
      for (TableFormat f : {TableFormat::Dense, TableFormat::RowwiseU8}) {
        SCOPED_TRACE(fmt::format("d {} {} {}", dim, dtype_name(dt),
                                 f == TableFormat::Dense ? "dense" : "rowwise"));
        DlrmSparseShape s = sparse_test::shape(2048, dim, rows, nn::BagMode::Sum, f, dt);
        s.col_align = 8;
        s.bags_only = true;
        expect_compiles(s);
        expect_compiles(s, /*finish=*/true);
        EXPECT_NE(emit_dlrm_sparse_finish(s).source.find(fmt::format(", {}>(", 16 / dtype_size(dt))),
                  std::string::npos) << "16-byte loads of the pooled bags";
      }
  DlrmSparseShape odd = sparse_test::shape(5, 3, {5, 7});
  odd.bags_only = true;
  expect_compiles(odd);
  expect_compiles(odd, /*finish=*/true);
}

// torchrec's KeyedJaggedTensor bags (closed offsets: the batch is offsets_0's count - 1) and pair
// order on every pair path: one per lane (5 tables), 4x4 tiles (f32, 26 tables), mma (bf16).
TEST(DlrmSparseNvrtc, ClosedOffsetsAndUpperPairs) {
  for (auto [dim, rows] : {std::pair{int64_t{16}, kKaggleRows}, {int64_t{128}, mlperf_rows()},
                           {int64_t{8}, std::vector<int64_t>{10, 20, 30}}})
    for (DType dt : {DType::F32, DType::BF16}) {
      SCOPED_TRACE(fmt::format("d {} {}", dim, dtype_name(dt)));
      DlrmSparseShape s = sparse_test::shape(2048, dim, rows, nn::BagMode::Sum, TableFormat::Dense, dt, DType::I64);
      s.closed = true;
      s.pairs = nn::PairOrder::Upper;
      s.dynamic_batch = true;
      expect_compiles(s);
      const std::string src = emit_dlrm_sparse(s).source;
      EXPECT_NE(src.find("kBatch = n_offsets_0 - 1"), std::string::npos);
      EXPECT_NE(src.find(", true, true>("), std::string::npos) << "CLOSED and UPPER";
      EXPECT_NE(emit_dlrm_sparse(s).entry, emit_dlrm_sparse(sparse_test::shape(2048, dim, rows, nn::BagMode::Sum,
                                                                               TableFormat::Dense, dt, DType::I64))
                                               .entry);
    }
  // The kernel takes closed offsets [B + 1] and refuses open ones [B].
  DlrmSparseShape s = sparse_test::shape(64, 16, {1000});
  s.closed = true;
  s.dynamic_batch = true;
  const DlrmSparse op(s);
  const std::vector<DType> dt{DType::F32, DType::F32, DType::I32, DType::I32};
  EXPECT_TRUE(test::cuda_kernel_for(op, {{5, 16}, {1000, 16}, {9}, {6}}, dt));
  EXPECT_FALSE(test::cuda_kernel_for(op, {{5, 16}, {1000, 16}, {9}, {5}}, dt));
}

// The kernel reads the batch at run time (offsets_0's count): one source serves every batch, and a
// dynamic-batch op takes whatever batch its inputs have, while a static one refuses another.
TEST(DlrmSparseNvrtc, OneSourceServesEveryBatch) {
  const std::vector<int64_t> rows{1000, 20, 30000};
  for (bool dynamic : {false, true}) {
    DlrmSparseShape s = sparse_test::shape(64, 16, rows);
    s.dynamic_batch = dynamic;
    const DlrmSparse op(s);
    auto dims = [&](int64_t b) {
      return std::vector<std::vector<int64_t>>{{b, 16}, {1000, 16}, {7}, {b}, {20, 16}, {7}, {b},
                                               {30000, 16}, {7}, {b}};
    };
    const std::vector<DType> dt{DType::F32, DType::F32, DType::I32, DType::I32, DType::F32,
                                DType::I32, DType::I32, DType::F32, DType::I32, DType::I32};
    const auto at64 = test::cuda_kernel_for(op, dims(64), dt);
    ASSERT_TRUE(at64);
    EXPECT_NE(at64->source.find("kBatch = n_offsets_0"), std::string::npos);
    const auto at3 = test::cuda_kernel_for(op, dims(3), dt);
    ASSERT_EQ(at3.has_value(), dynamic) << "a static op refuses another batch";
    if (!at3) continue;
    EXPECT_EQ(at3->source, at64->source);
    EXPECT_EQ(at3->entry, at64->entry);
    EXPECT_LT(at3->grid[0], at64->grid[0]);
    expect_compiles(s);
  }
}

}  // namespace
}  // namespace luminal::custom
