// The GEMV kernel (src/cuda/kernels/gemv.cuh) compiles with NVRTC for sm_90 for every dtype it
// serves, and refuses the others by name.
#include <gtest/gtest.h>

#include "cuda/runtime/gemv.h"
#include "expect_error.h"
#include "nvrtc/nvrtc_compile.h"

namespace luminal {
namespace {

TEST(GemvCompile, EveryServedDtypeCompiles) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (int loads : {2, 4, 8, 16})
      EXPECT_TRUE(test::nvrtc_compiles(cuda::gemv_source(dt, loads), cuda::gemv_entry(dt)))
          << dtype_name(dt) << " loads " << loads;
}

// Llama-1B's decode projections (bf16: 8 elements per 16-byte vector): a column's k range is
// split until about 8192 warps run, keeping at least 32 vectors (one per lane) per slice.
TEST(GemvSplits, SmallProjectionsSplitTheirRowsLargeOnesDoNot) {
  EXPECT_EQ(cuda::gemv_splits(2048, 2048, 8), 4);    // q / o
  EXPECT_EQ(cuda::gemv_splits(512, 2048, 8), 8);     // k / v
  EXPECT_EQ(cuda::gemv_splits(8192, 2048, 8), 1);    // gate / up
  EXPECT_EQ(cuda::gemv_splits(2048, 8192, 8), 4);    // down
  EXPECT_EQ(cuda::gemv_splits(128256, 2048, 8), 1);  // LM head
  EXPECT_EQ(cuda::gemv_splits(64, 40, 8), 1);        // 5 vectors: one slice
  EXPECT_EQ(cuda::gemv_splits(64, 512, 4), 4);       // f32: 128 vectors, 4 slices of 32
}

TEST(GemvCompile, OtherDtypesAreRefused) {
  test::expect_error([] { cuda::gemv_source(DType::F64); }, {"no GEMV kernel", "f64"});
  test::expect_error([] { cuda::gemv_entry(DType::I32); }, {"no GEMV kernel"});
}

}  // namespace
}  // namespace luminal
