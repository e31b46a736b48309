// NVRTC compile checks of the CrossGemm kernels (no GPU needed): the mma.sync core for sm_90 and
// the wgmma core for sm_90a (3 stages, and 3 or 4 overlapped; 128- and 64-row tiles), bf16 and f16 at DLRM-v2's cross
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
    int tile_m = 128;
  };
  for (Core core : {Core{false, 3, false}, Core{true, 3, false}, Core{true, 3, true}, Core{true, 4, true},
                    Core{true, 3, false, 64}, Core{true, 4, true, 64}})
    for (DType dt : {DType::BF16, DType::F16})
      for (auto [n, k] : {std::pair<int64_t, int64_t>{3456, 512}, {136, 40}, {8, 8}, {1024, 24}}) {
        SCOPED_TRACE(fmt::format("n {} k {} {}{} {} stages{}, {}-row tiles", n, k, dtype_name(dt),
                                 core.wgmma ? " wgmma" : "", core.stages, core.overlap ? " overlapped" : "",
                                 core.tile_m));
        const CustomKernel kern =
            emit_cross_gemm({n, k, dt, true, core.stages, core.overlap, core.tile_m}, 2048, core.wgmma);
        ASSERT_TRUE(test::compiles_without_spills(kern.source, kern.entry, core.wgmma));
        EXPECT_EQ(kern.grid[0], unsigned((n + 127) / 128));
        EXPECT_EQ(kern.grid[1], unsigned(2048 / core.tile_m));
        EXPECT_EQ(kern.block[0], unsigned(2 * core.tile_m));
        // A stage: u's tile_m rows and W's 128 rows of 64 bf16.
        EXPECT_EQ(kern.shared_bytes, core.wgmma ? unsigned(core.stages * (core.tile_m + 128) * 128 + 1024) : 65536u);
      }
}

}  // namespace
}  // namespace luminal::custom
