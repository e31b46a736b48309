// NVRTC compile checks of the MlpChain kernel (no GPU needed): DLRM-v2's top MLP (3456 -> 1024 ->
// 1024 -> 512 -> 256 -> 1), its cross net and top MLP as one chain of 11 layers, its bottom MLP's
// tail (512 -> 256 -> 128), and a chain with partial tiles,
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
    std::vector<ChainEpilogue> epi;
    std::vector<bool> bias;
  };
  using E = ChainEpilogue;
  std::vector<int64_t> tail{512, 3456, 512, 3456, 512, 3456, 1024, 1024, 512, 256, 1};
  std::vector<E> tail_epi{E::None, E::Cross, E::None, E::Cross, E::None, E::Cross, E::Relu, E::Relu, E::Relu, E::Relu, E::None};
  std::vector<bool> tail_bias{false, true, false, true, false, true, true, true, true, true, true};
  for (const Chain& c : {Chain{3456, {1024, 1024, 512, 256, 1}, {E::Relu, E::Relu, E::Relu, E::Relu, E::None}, {}},
                         Chain{3456, tail, tail_epi, tail_bias}, Chain{512, {256, 128}, {E::Relu, E::Relu}, {}},
                         Chain{40, {72, 136, 1}, {E::Relu, E::None, E::None}, {}}})
    for (DType dt : {DType::BF16, DType::F16})
      for (int tile_m : {64, 32}) {
        SCOPED_TRACE(fmt::format("k {} layers {} {} tile {}", c.k, c.widths.size(), dtype_name(dt), tile_m));
        const CustomKernel kern = emit_mlp_chain({c.k, c.widths, c.epi, c.bias, dt, tile_m}, 270, 132);
        ASSERT_TRUE(test::compiles_without_spills(kern.source, kern.entry, false));
      }
}

}  // namespace
}  // namespace luminal::custom
