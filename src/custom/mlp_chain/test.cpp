// MlpChain on the CPU: its decomposition on the reference runtime against the loop oracle (f32,
// bf16, f16; a dynamic batch), the builder's errors naming the tensor, and the kernel's launch
// shape, workspace and declines (no GPU needed).
#include <gtest/gtest.h>

#include <cmath>

#include "custom/mlp_chain/test_util.h"
#include "expect_error.h"
#include "luminal/reference.h"
#include "test_caps.h"

namespace luminal {
namespace {

namespace mt = mlp_chain_test;

TEST(MlpChain, DecompositionMatchesLoops) {
  uint32_t seed = 21;
  const auto [cross_widths, cross_epi] = mt::cross_then_top(24, 2, 8, {16, 1});
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
  for (bool cross : {false, true}) {
    const mt::Case c = cross ? mt::random_chain_case(7, 24, cross_widths, cross_epi, dt, seed++)
                             : mt::random_case(7, 24, {16, 40, 1}, {true, true, false}, dt, seed++);
    Graph g;
    const mt::Bound b = mt::build(g, c, /*dynamic=*/true, /*chain=*/true);
    ReferenceRuntime rt(g);
    mt::set_inputs(rt, b, c);
    rt.execute({{"m", c.m}});
    const std::vector<double> want = mt::loops(c);
    // The reference rounds after each op in 16-bit dtypes (the oracle once per layer).
    const double tol = dt == DType::F32 ? 1e-5 : dt == DType::BF16 ? 3e-2 : 4e-3;
    EXPECT_EQ(mt::mismatch(rt.get_f32(b.out), want, tol, tol), "") << dtype_name(dt) << (cross ? " cross" : "");
    double biggest = 0;
    for (double v : want) biggest = std::max(biggest, std::abs(v));
    EXPECT_GT(biggest, 0.05) << "the case is not all zeros";
  }
}

TEST(MlpChain, BuilderNamesTheTensorThatDoesNotFit) {
  Graph g;
  const Expr m = Expr::sym("m");
  const GraphTensor x = g.named_tensor("x", {m, 16}, DType::BF16);
  const GraphTensor w0 = g.named_tensor("w0", {24, 16}, DType::BF16), b0 = g.named_tensor("b0", {24}, DType::BF16);
  const GraphTensor w1 = g.named_tensor("w1", {8, 24}, DType::BF16), b1 = g.named_tensor("b1", {8}, DType::BF16);
  test::expect_error([&] { custom::linear_chain(x, {w0, g.named_tensor("w1b", {8, 16}, DType::BF16)}, {b0, b1}, {true, false}); },
                     {"[mlp_chain] W1 is [8, 16] bf16, expected [8, 24] bf16"});
  test::expect_error([&] { custom::linear_chain(x, {w0, w1}, {b0, g.named_tensor("b1b", {8})}, {true, false}); },
                     {"[mlp_chain] b1 is [8] f32, expected [8] bf16"});
  test::expect_error([&] { custom::linear_chain(x, {w0, w1}, {b0}, {true, false}); }, {"[mlp_chain] 2 weights and 1 biases"});
  test::expect_error([&] { custom::linear_chain(x, {w0, w1}, {b0, b1}, {true}); }, {"[mlp_chain] 1 relu flags for 2 layers"});
  test::expect_error([&] { custom::linear_chain(x, {}, {}, {}); }, {"[mlp_chain] no layers"});
  test::expect_error([&] { custom::linear_chain(x, {w0, w1}, {b0, b1}, {true, false}, 128); },
                     {"[mlp_chain] tile_m 128, expected 64 or 32"});
  EXPECT_NO_THROW(custom::linear_chain(x, {w0, w1}, {b0, b1}, {true, false}, 32));
  using E = custom::ChainEpilogue;
  const GraphTensor v = g.named_tensor("v", {8, 16}, DType::BF16), wx = g.named_tensor("wx", {16, 8}, DType::BF16),
                    bx = g.named_tensor("bx", {16}, DType::BF16);
  EXPECT_NO_THROW(custom::mlp_chain(x, {v, wx}, {std::nullopt, bx}, {E::None, E::Cross}));
  test::expect_error([&] { custom::mlp_chain(x, {v, wx}, {std::nullopt, std::nullopt}, {E::None, E::Cross}); },
                     {"[mlp_chain] cross layer 1 needs a layer before it, a bias, and its width (16) equal to the chain's "
                      "input width (16) and to layer 0's input width"});
  test::expect_error([&] { custom::mlp_chain(x, {w0}, {b0}, {E::Cross}); }, {"[mlp_chain] cross layer 0 needs"});
  test::expect_error([&] { custom::mlp_chain(x, {w0, w1}, {b0, b1}, {E::None, E::Cross}); }, {"[mlp_chain] cross layer 1 needs"});
}

TEST(MlpChain, KernelLaunchShapeWorkspaceAndDeclines) {
  // DLRM-v2's top MLP: 3456 -> 1024 -> 1024 -> 512 -> 256 -> 1.
  const std::vector<int64_t> widths{1024, 1024, 512, 256, 1};
  auto kernel = [&](int64_t m, DType dt, const DeviceCaps& caps, int tile_m = 64, int64_t k = 3456) {
    std::vector<std::vector<int64_t>> dims{{m, k}};
    int64_t in = k;
    for (int64_t n : widths) dims.push_back({n, in}), dims.push_back({n}), in = n;
    return test::cuda_kernel_for(custom::MlpChain({k, widths, mt::relus({true, true, true, true, false}), {}, dt, tile_m}), dims,
                                 std::vector<DType>(dims.size(), dt), caps);
  };
  const auto k = kernel(270, DType::BF16, test::h200_caps());
  ASSERT_TRUE(k);
  EXPECT_EQ(k->block[0], 128u);
  // 5 row blocks x (16 + 16 + 8 + 4 + 1) column blocks; the layers of k >= 1024 with fewer tiles than
  // two waves of 132 SMs split k: 3456 in 6 slices of 576, 1024 in 2 of 512. 480 + 160 + 80 + 20 +
  // 5 = 745 work items, more than 3 blocks x 132 SMs: the grid stops there.
  EXPECT_EQ(k->grid[0], 3u * 132);
  EXPECT_NE(k->source.find("1024, 3456, 1, 6, 576}"), std::string::npos) << k->source;
  EXPECT_NE(k->source.find("1024, 1024, 1, 2, 512}"), std::string::npos);
  EXPECT_NE(k->source.find("256, 512, 1, 1, 512}"), std::string::npos) << "k 512: not split";
  EXPECT_EQ(kernel(70, DType::BF16, test::h200_caps())->grid[0], 2u * 16 * 6 + 2 * 16 * 2 + 2 * 8 * 2 + 2 * 4 + 2)
      << "70 rows: 298 items";
  EXPECT_EQ(k->shared_bytes, unsigned(4 * 128 * 64 + 16 + 5 * 40)) << "4 stages, the ticket, the layer table";
  // Counters (ticket, exit, 1024 row blocks x 5 layers, 1024 x (16 + 16 + 8) tiles' arrivals for the
  // split layers), two [270, 1024] bf16 buffers, the partial sums [270][6 slices x 1024] in fp32.
  const size_t counters = ((2 + 5 * 1024 + 1024 * 40) * 4 + 255) / 256 * 256;
  EXPECT_EQ(k->workspace_bytes, counters + 2 * ((270 * 1024 * 2 + 255) / 256 * 256) + 270 * 6 * 1024 * 4);
  EXPECT_EQ(kernel(16384, DType::BF16, test::h200_caps())->grid[0], 3u * 132) << "the grid stops at 3 blocks per SM";
  EXPECT_EQ(kernel(16384, DType::BF16, test::h200_caps())->source, k->source) << "one kernel for every batch";
  EXPECT_EQ(kernel(16384, DType::BF16, test::h200_caps())->workspace_bytes,
            counters + 2 * size_t(16384 * 1024 * 2)) << "no layer split at 16384 rows: no partial sums";
  EXPECT_EQ(kernel(270, DType::BF16, test::h200_caps(), 32)->grid[0], 3u * 132) << "32-row tiles: 9 x 16 x 4 + ... items";
  EXPECT_TRUE(kernel(1, DType::F16, test::h200_caps()));
  EXPECT_TRUE(kernel(65536, DType::BF16, test::h200_caps()));
  EXPECT_FALSE(kernel(65537, DType::BF16, test::h200_caps())) << "past the counters' rows: the per-layer GEMMs";
  EXPECT_THROW(custom::emit_mlp_chain({3456, widths, mt::relus({true, true, true, true, false})}, 65537, 132),
               std::invalid_argument);
  EXPECT_FALSE(kernel(270, DType::F32, test::h200_caps())) << "f32: the decomposition (the GEMM library)";
  EXPECT_FALSE(kernel(270, DType::BF16, test::h200_caps(), 64, 13)) << "k 13: rows not in 16-byte chunks";
  DeviceCaps turing = test::h200_caps();
  turing.cc_major = 7;
  EXPECT_FALSE(kernel(270, DType::BF16, turing)) << "no cp.async / bf16 mma before sm_80";
}

}  // namespace
}  // namespace luminal
