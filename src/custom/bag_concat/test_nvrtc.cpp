// NVRTC compile checks of the generated BagConcat kernel for sm_90 (no GPU needed): f32 / bf16,
// i32 / i64, sum / mean at several d and table counts (MLPerf DLRM-v2's 26 x 128 among them)
// compile with no stack frame and no register spills; the parameter limit declines, not fails.
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <string>

#include "custom/bag_concat/op.h"
#include "luminal/device.h"
#include "nvrtc/nvrtc_compile.h"

namespace luminal::custom {
namespace {

BagConcatShape shape_of(int64_t d, int64_t tables, DType dt, DType it, nn::BagMode mode) {
  BagConcatShape s;
  s.dim = d, s.dtype = dt, s.index_dtype = it, s.mode = mode;
  for (int64_t t = 0; t < tables; ++t) s.rows.push_back(1000 + t);
  return s;
}

void expect_compiles(const BagConcatShape& s) {
  SCOPED_TRACE(fmt::format("d {} tables {} {} {} {}", s.dim, s.tables(), dtype_name(s.dtype),
                           dtype_name(s.index_dtype), s.mode == nn::BagMode::Sum ? "sum" : "mean"));
  for (int64_t batch : {2048, 16384}) {  // bags split over 4 threads (dense tables), then not
    const CustomKernel k = emit_bag_concat(s, batch);
    ASSERT_TRUE(test::compiles_without_spills(k.source, k.entry)) << "batch " << batch;
    EXPECT_EQ(k.grid[2], unsigned(s.parts()));
    EXPECT_LE(k.block[0] * k.block[1] * k.block[2], 256u);
    const int64_t splits = bag_splits(s, batch);
    if (s.format != TableFormat::Dense || batch > 4096) EXPECT_EQ(splits, 1);
    if (splits > 1) EXPECT_EQ(k.block[1], unsigned(splits));
    const int64_t per_block = splits > 1 ? k.block[2] : k.block[1];
    EXPECT_EQ(k.grid[0], unsigned((batch + per_block - 1) / per_block))
        << "every sample has a block";
  }
}

TEST(BagConcatNvrtc, AllVariantsCompile) {
  for (int64_t d : {3, 16, 128})
    for (DType dt : {DType::F32, DType::BF16})
      for (DType it : {DType::I32, DType::I64})
        for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
          expect_compiles(shape_of(d, 3, dt, it, mode));
}

// The bags without x (bags_concat: the sparse half that runs beside the bottom MLP), open and
// closed offsets, dense and row-wise u8 tables, MLPerf's 26 x 128 among them.
TEST(BagConcatNvrtc, BagsOnlyVariantsCompile) {
  for (int64_t d : {16, 128})
    for (bool closed : {false, true})
      for (TableFormat format : {TableFormat::Dense, TableFormat::RowwiseU8}) {
        BagConcatShape s = shape_of(d, d == 128 ? 26 : 3, DType::BF16, closed ? DType::I64 : DType::I32,
                                    nn::BagMode::Sum);
        s.with_x = false, s.closed = closed, s.format = format;
        expect_compiles(s);
        const CustomKernel k = emit_bag_concat(s, 270);
        EXPECT_EQ(k.source.find("const void* x,"), std::string::npos) << "no x parameter";
        EXPECT_NE(k.source.find(closed ? "batch = no0 - 1;" : "batch = no0;"), std::string::npos);
      }
}

// Row-wise u8 tables (DLRM int8): codes dequantized while pooling.
TEST(BagConcatNvrtc, RowwiseU8VariantsCompile) {
  for (int64_t d : {3, 16, 128})
    for (DType dt : {DType::F32, DType::BF16})
      for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean}) {
        BagConcatShape s = shape_of(d, 3, dt, DType::I64, mode);
        s.format = TableFormat::RowwiseU8;
        expect_compiles(s);
      }
  BagConcatShape mlperf = shape_of(128, 26, DType::BF16, DType::I32, nn::BagMode::Sum);
  mlperf.format = TableFormat::RowwiseU8;
  expect_compiles(mlperf);
}

TEST(BagConcatNvrtc, MlperfShapeCompiles) {
  expect_compiles(shape_of(128, 26, DType::BF16, DType::I32, nn::BagMode::Sum));
  expect_compiles(shape_of(128, 26, DType::F32, DType::I64, nn::BagMode::Sum));
  expect_compiles(shape_of(4096, 1, DType::F32, DType::I32, nn::BagMode::Sum));  // 8 column blocks
  EXPECT_EQ(bag_splits(shape_of(128, 26, DType::BF16, DType::I32, nn::BagMode::Sum), 270), 4);
  EXPECT_EQ(bag_splits(shape_of(4096, 1, DType::F32, DType::I32, nn::BagMode::Sum), 270), 1)
      << "2 bags per block: no room for 4 threads a bag";
}

TEST(BagConcatNvrtc, TooManyTablesDeclines) {
  DeviceCaps caps;
  for (int64_t tables : {84, 85}) {
    const BagConcat op(shape_of(16, tables, DType::F32, DType::I32, nn::BagMode::Sum));
    std::vector<std::vector<int64_t>> dims{{8, 16}};
    std::vector<DType> dtypes{DType::F32};
    for (int64_t t = 0; t < tables; ++t) {
      dims.insert(dims.end(), {{1000 + t, 16}, {20}, {8}});
      dtypes.insert(dtypes.end(), {DType::F32, DType::I32, DType::I32});
    }
    EXPECT_EQ(op.cuda_kernel(KernelRequest{dims, dtypes, caps}).has_value(), tables == 84)
        << tables;
  }
}

// Four inputs per u8 table (codes, scale_bias, indices, offsets): 63 tables fit the parameters.
TEST(BagConcatNvrtc, TooManyRowwiseU8TablesDeclines) {
  DeviceCaps caps;
  for (int64_t tables : {63, 64}) {
    BagConcatShape s = shape_of(16, tables, DType::F32, DType::I32, nn::BagMode::Sum);
    s.format = TableFormat::RowwiseU8;
    const BagConcat op(s);
    std::vector<std::vector<int64_t>> dims{{8, 16}};
    std::vector<DType> dtypes{DType::F32};
    for (int64_t t = 0; t < tables; ++t) {
      dims.insert(dims.end(), {{1000 + t, 16}, {1000 + t, 2}, {20}, {8}});
      dtypes.insert(dtypes.end(), {DType::U8, DType::F32, DType::I32, DType::I32});
    }
    EXPECT_EQ(op.cuda_kernel(KernelRequest{dims, dtypes, caps}).has_value(), tables == 63)
        << tables;
  }
}

}  // namespace
}  // namespace luminal::custom
