// NVRTC compile checks of the generated EmbeddingBag kernel for sm_90 (no GPU needed): every table
// dtype x index dtype x mode at several d (scalar, 4-, 8- and 16-byte loads, several column
// blocks) compiles, with no stack frame and no register spills (ptxas -v).
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <string>

#include "custom/embedding_bag/op.h"
#include "nvrtc/nvrtc_compile.h"

namespace luminal::custom {
namespace {

void expect_compiles(int64_t d, DType dt, DType it, nn::BagMode mode) {
  SCOPED_TRACE(fmt::format("d {} {} {} {}", d, dtype_name(dt), dtype_name(it),
                           mode == nn::BagMode::Sum ? "sum" : "mean"));
  const CustomKernel k = emit_embedding_bag(d, dt, it, mode, 2048);
  ASSERT_TRUE(test::compiles_without_spills(k.source, k.entry));
  EXPECT_NE(k.source.find("extern \"C\" __global__ void __launch_bounds__(256, 4) " + k.entry),
            std::string::npos);
  EXPECT_LE(k.block[0] * k.block[1], 256u);
}

TEST(EmbeddingBagNvrtc, AllVariantsCompile) {
  for (int64_t d : {1, 3, 6, 16, 128})
    for (DType dt : {DType::F32, DType::BF16, DType::F16})
      for (DType it : {DType::I32, DType::I64})
        for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
          expect_compiles(d, dt, it, mode);
}

TEST(EmbeddingBagNvrtc, WideAndOddRows) {
  for (int64_t d : {24, 100, 257, 4096}) {
    expect_compiles(d, DType::F32, DType::I64, nn::BagMode::Sum);
    expect_compiles(d, DType::BF16, DType::I32, nn::BagMode::Mean);
  }
}

// Per-sample weights (a weighted KeyedJaggedTensor's bags: closed offsets), every table dtype.
TEST(EmbeddingBagNvrtc, WeightedBagsCompile) {
  for (int64_t d : {3, 16, 128})
    for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
      SCOPED_TRACE(fmt::format("weighted d {} {}", d, dtype_name(dt)));
      const CustomKernel k = emit_embedding_bag(d, dt, DType::I64, nn::BagMode::Sum, 2048, /*closed=*/true, /*weighted=*/true);
      ASSERT_TRUE(test::compiles_without_spills(k.source, k.entry));
      EXPECT_NE(k.source.find("weights_"), std::string::npos);
      EXPECT_NE(k.entry, emit_embedding_bag(d, dt, DType::I64, nn::BagMode::Sum, 2048, true).entry);
    }
}

}  // namespace
}  // namespace luminal::custom
