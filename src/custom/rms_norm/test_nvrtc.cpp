// NVRTC compile checks of the generated RmsNorm kernel for sm_90 (no GPU needed): every dtype at
// row lengths that take a warp or a block, 16-byte, narrower and scalar loads, one and several
// chunks per thread, with no stack frame and no register spills (ptxas -v).
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <regex>
#include <string>

#include "custom/rms_norm/op.h"
#include "nvrtc/nvrtc_compile.h"

namespace luminal::custom {
namespace {

void expect_compiles(int64_t d, DType dt) {
  SCOPED_TRACE(fmt::format("D {} {}", d, dtype_name(dt)));
  const CustomKernel k = emit_rms_norm(d, dt, 1e-5, 512);
  const test::NvrtcCompile r = test::nvrtc_compile_sm90(
      k.source, k.entry, {"-std=c++20", "-default-device", "--ptxas-options=-v"});
  ASSERT_TRUE(r.ok) << "NVRTC failed for " << k.entry << "\n--- log ---\n"
                    << r.log << "\n--- source ---\n"
                    << test::numbered(k.source);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.log, m,
                                std::regex(R"((\d+) bytes stack frame, (\d+) bytes spill stores)")))
      << r.log;
  EXPECT_EQ(m[1].str(), "0") << "local memory used\n" << r.log << k.source;
  EXPECT_EQ(m[2].str(), "0") << "register spills\n" << r.log << k.source;
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
