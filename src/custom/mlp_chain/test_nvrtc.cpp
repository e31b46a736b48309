// NVRTC compile checks of the MlpChain kernel (no GPU needed): DLRM-v2's top MLP (3456 -> 1024 ->
// 1024 -> 512 -> 256 -> 1) and bottom MLP tail (512 -> 256 -> 128), and a chain with partial tiles,
// bf16 and f16, 64- and 32-row tiles, compile for sm_90 with no stack frame and no register spills.
#include <gtest/gtest.h>

#include "custom/mlp_chain/op.h"
#include "luminal/device.h"
#include "nvrtc/nvrtc_compile.h"

namespace luminal::custom {
namespace {

TEST(MlpChainNvrtc, CompilesWithoutSpills) {
  struct Chain {
    int64_t k;
    std::vector<int64_t> widths;
    std::vector<bool> relu;
  };
  for (const Chain& c : {Chain{3456, {1024, 1024, 512, 256, 1}, {true, true, true, true, false}},
                         Chain{512, {256, 128}, {true, true}}, Chain{40, {72, 136, 1}, {true, false, false}}})
    for (DType dt : {DType::BF16, DType::F16})
      for (int tile_m : {64, 32}) {
        SCOPED_TRACE(fmt::format("k {} layers {} {} tile {}", c.k, c.widths.size(), dtype_name(dt), tile_m));
        const CustomKernel kern = emit_mlp_chain({c.k, c.widths, c.relu, dt, tile_m}, 270, 132);
        ASSERT_TRUE(test::compiles_without_spills(kern.source, kern.entry, false));
      }
}

}  // namespace
}  // namespace luminal::custom
