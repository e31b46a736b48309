// NVRTC compile checks of the generated RmsNorm kernel for sm_90 (no GPU needed): every dtype at
// row lengths that take a warp or a block, 16-byte, narrower and scalar loads, one and several
// chunks per thread, with no stack frame and no register spills (ptxas -v).
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <string>

#include "custom/rms_norm/op.h"
#include "nvrtc/nvrtc_compile.h"

namespace luminal::custom {
namespace {

void expect_compiles(int64_t d, DType dt) {
  SCOPED_TRACE(fmt::format("D {} {}", d, dtype_name(dt)));
  const CustomKernel k = emit_rms_norm(d, dt, 1e-5, 512);
  ASSERT_TRUE(test::compiles_without_spills(k.source, k.entry));
  EXPECT_EQ(k.grid[0], 512u);
  EXPECT_LE(k.block[0], 512u);
}

TEST(RmsNormNvrtc, AllDtypesCompile) {
  for (int64_t d : {1, 8, 100, 101, 2048, 4096})
    for (DType dt : {DType::F32, DType::BF16, DType::F16}) expect_compiles(d, dt);
}

TEST(RmsNormNvrtc, LongRowsKeepChunksInRegisters) {
  expect_compiles(16384, DType::F32);   // 512 threads x 8 chunks of 4
  expect_compiles(32768, DType::BF16);  // 512 threads x 8 chunks of 8
  expect_compiles(3 * 2048 + 2, DType::BF16);
}

}  // namespace
}  // namespace luminal::custom
