// NVRTC compile checks of the CrossGemm kernels (no GPU needed): the mma.sync core for sm_90 and
// the wgmma core for sm_90a, bf16 and f16 at DLRM-v2's cross layer (n 3456, rank 512) and at widths
// that leave partial tiles, compile with no stack frame and no register spills (the declines are
// checked in test.cpp).
#include <gtest/gtest.h>

#include "custom/cross_gemm/op.h"
#include "luminal/device.h"
#include "nvrtc/nvrtc_compile.h"

namespace luminal::custom {
namespace {

TEST(CrossGemmNvrtc, CompilesWithoutSpills) {
  for (bool wgmma : {false, true})
    for (DType dt : {DType::BF16, DType::F16})
      for (auto [n, k] : {std::pair<int64_t, int64_t>{3456, 512}, {136, 40}, {8, 8}, {1024, 24}}) {
        SCOPED_TRACE(fmt::format("n {} k {} {}{}", n, k, dtype_name(dt), wgmma ? " wgmma" : ""));
        const CustomKernel kern = emit_cross_gemm({n, k, dt}, 2048, wgmma);
        ASSERT_TRUE(test::compiles_without_spills(kern.source, kern.entry, wgmma));
        EXPECT_EQ(kern.grid[0], unsigned((n + 127) / 128));
        EXPECT_EQ(kern.grid[1], 16u);
        EXPECT_EQ(kern.block[0], 256u);
      }
}

}  // namespace
}  // namespace luminal::custom
