// NVRTC compile checks of the CrossGemm kernels (no GPU needed): the mma.sync core for sm_90 and
// the wgmma core for sm_90a (3 stages, and 3 or 4 overlapped), bf16 and f16 at DLRM-v2's cross
// layer (n 3456, rank 512) and at widths that leave partial tiles, compile with no stack frame and
// no register spills (the declines are checked in test.cpp).
#include <gtest/gtest.h>

#include "custom/cross_gemm/op.h"
#include "luminal/device.h"
#include "nvrtc/nvrtc_compile.h"

namespace luminal::custom {
namespace {

TEST(CrossGemmNvrtc, CompilesWithoutSpills) {
  struct Core {
    bool wgmma;
    int stages;
    bool overlap;
  };
  for (Core core : {Core{false, 3, false}, Core{true, 3, false}, Core{true, 3, true}, Core{true, 4, true}})
    for (DType dt : {DType::BF16, DType::F16})
      for (auto [n, k] : {std::pair<int64_t, int64_t>{3456, 512}, {136, 40}, {8, 8}, {1024, 24}}) {
        SCOPED_TRACE(fmt::format("n {} k {} {}{} {} stages{}", n, k, dtype_name(dt), core.wgmma ? " wgmma" : "",
                                 core.stages, core.overlap ? " overlapped" : ""));
        const CustomKernel kern = emit_cross_gemm({n, k, dt, true, core.stages, core.overlap}, 2048, core.wgmma);
        ASSERT_TRUE(test::compiles_without_spills(kern.source, kern.entry, core.wgmma));
        EXPECT_EQ(kern.grid[0], unsigned((n + 127) / 128));
        EXPECT_EQ(kern.grid[1], 16u);
        EXPECT_EQ(kern.block[0], 256u);
        EXPECT_EQ(kern.shared_bytes, core.wgmma ? unsigned(core.stages * 32768 + 1024) : 65536u);
      }
}

}  // namespace
}  // namespace luminal::custom
