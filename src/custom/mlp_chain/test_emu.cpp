// The MlpChain kernel (mlp_chain.cuh) run by the host emulation (tests/emu) against the loop
// oracle: the generated entry's workspace layout, tickets and per-row-block waits with blocks
// running together and one at a time, partial row / column / k tiles, a last layer one wide, both
// tile heights, bf16 and f16, and the counters left zero for the next launch (run twice, at two
// batches, over one workspace).
#include <gtest/gtest.h>

#include "custom/mlp_chain/mlp_chain.cuh"
#include "custom/mlp_chain/test_util.h"

namespace luminal {
namespace {

using mlp_chain_test::Case;

std::vector<uint16_t> bits(const std::vector<float>& v, bool f16) {
  std::vector<uint16_t> out;
  for (float x : v) out.push_back(f16 ? f32_to_f16_bits(x) : f32_to_bf16_bits(x));
  return out;
}

// The chain of `c` through the emitted launch (grid, shared bytes, workspace size) and the generated
// entry's arguments, recomputed here and checked against its source; `ws` is the step's workspace.
template <bool F16, int BM, int L>
std::vector<float> run(const Case& c, unsigned together, std::vector<unsigned char>& ws, int sm_count) {
  std::vector<bool> bias;
  for (const auto& b : c.b) bias.push_back(!b.empty());
  custom::MlpChainShape s{c.k, c.widths, c.epi, bias, c.dt, BM};
  const CustomKernel k = custom::emit_mlp_chain(s, c.m, sm_count);
  int64_t hidden = 0;
  for (size_t l = 0; l + 1 < c.widths.size(); ++l) hidden = std::max(hidden, c.widths[l]);
  const int row_cap = int(custom::kMlpChainMaxRows / BM);
  const long long act_offset = ((2 + L * row_cap) * 4 + 255) / 256 * 256, act_elems = (c.m * hidden * 2 + 255) / 256 * 128;
  EXPECT_NE(k.source.find(fmt::format("workspace, {}, {}, (m * {} * 2 + 255) / 256 * 128", row_cap, act_offset, hidden)),
            std::string::npos) << k.source;
  EXPECT_NE(k.source.find(fmt::format("mlp_chain::run<{}, {}, {}>", F16 ? "true" : "false", BM, L)), std::string::npos);
  EXPECT_EQ(k.shared_bytes, unsigned(mlp_chain::shared_bytes<BM, L>()));
  static_assert(sizeof(mlp_chain::Layer) == 32, "emit.cpp counts 32 bytes a layer");
  EXPECT_GE(k.workspace_bytes, size_t(act_offset + 2 * act_elems * 2));
  // The workspace: zero where the kernel counts (allocated zeroed, as the runtime does), poison
  // elsewhere, a canary past its end.
  if (ws.size() < k.workspace_bytes + 64) ws.assign(k.workspace_bytes + 64, 0);
  for (size_t i = 0; i < size_t(act_offset); ++i) EXPECT_EQ(ws[i], 0) << "counter byte " << i << " left nonzero";
  std::fill(ws.begin() + act_offset, ws.begin() + long(k.workspace_bytes), 0xA5);
  std::fill(ws.begin() + long(k.workspace_bytes), ws.end(), 0x5A);

  const auto x = bits(c.x, F16);
  std::vector<std::vector<uint16_t>> w, b;
  for (size_t l = 0; l < c.widths.size(); ++l) w.push_back(bits(c.w[l], F16)), b.push_back(bits(c.b[l], F16));
  mlp_chain::Layer layers[L];
  for (int l = 0; l < L; ++l) {
    const size_t i = size_t(l);
    layers[l] = {w[i].data(), b[i].empty() ? nullptr : b[i].data(), int(c.widths[i]), int(s.in_width(i)), int(c.epi[i])};
    // The generated entry's table row says the same.
    EXPECT_NE(k.source.find(fmt::format("{}, {}, {}, {}}}", b[i].empty() ? "nullptr" : fmt::format("static_cast<const unsigned short*>(b{})", l),
                                        c.widths[i], s.in_width(i), int(c.epi[i]))),
              std::string::npos) << "layer " << l << "\n" << k.source;
  }
  std::vector<uint16_t> out(size_t(c.m * c.widths.back()), 0x7fc1);  // poison: NaN in both formats
  emu::launch(k.grid[0], k.block[0], k.shared_bytes, together, [&] {
    mlp_chain::run<F16, BM, L>(x.data(), out.data(), layers, c.m, ws.data(), row_cap, act_offset, act_elems);
  });
  for (size_t i = k.workspace_bytes; i < ws.size(); ++i) EXPECT_EQ(ws[i], 0x5A) << "written past the workspace";
  for (size_t i = 0; i < size_t(act_offset); ++i) EXPECT_EQ(ws[i], 0) << "counter byte " << i << " left nonzero";
  std::vector<float> got;
  for (uint16_t h : out) got.push_back(F16 ? f16_bits_to_f32(h) : bf16_bits_to_f32(h));
  return got;
}

template <bool F16, int BM, int L>
void check(Case c, unsigned together, int sm_count, std::vector<unsigned char>& ws) {
  static_assert(int(custom::ChainEpilogue::Relu) == mlp_chain::kRelu && int(custom::ChainEpilogue::Cross) == mlp_chain::kCross);
  SCOPED_TRACE(fmt::format("m {} k {} layers {} {} tile {} blocks together {} sm_count {}", c.m, c.k,
                           fmt::join(c.widths, "-"), F16 ? "f16" : "bf16", BM, together, sm_count));
  const std::vector<float> got = run<F16, BM, L>(c, together, ws, sm_count);
  const std::vector<double> want = mlp_chain_test::loops(c);
  double biggest = 0;
  for (double v : want) biggest = std::max(biggest, std::abs(v));
  EXPECT_GT(biggest, 0.05) << "a case of near-zero outputs checks little";
  // Float accumulation beside double, then one rounding per layer (either side of a tie).
  EXPECT_EQ(mlp_chain_test::mismatch(got, want, F16 ? 2e-3 : 1.5e-2, F16 ? 4e-3 : 2e-2), "");
}

Case make(int64_t m, int64_t k, std::vector<int64_t> widths, std::vector<bool> relu, bool f16, uint32_t seed) {
  return mlp_chain_test::random_case(m, k, std::move(widths), std::move(relu), f16 ? DType::F16 : DType::BF16, seed);
}

TEST(MlpChainEmu, MatchesLoopsWithBlocksTogetherOrInTurn) {
  // Three layers: partial row blocks (70 rows), a 72-wide layer (a partial column tile), k 40 (a
  // partial k tile), the last layer 1 wide without ReLU (DLRM's logit). One workspace across the
  // launches of one shape, as the runtime keeps a step's, so each launch starts from the counters
  // the one before left, and from its activations (a smaller batch last).
  std::vector<unsigned char> ws64, ws32, ws64_f16, ws_two, ws_two_f16;
  check<false, 64, 3>(make(70, 40, {72, 136, 1}, {true, true, false}, false, 1), 3, 1, ws64);
  check<false, 64, 3>(make(70, 40, {72, 136, 1}, {true, true, false}, false, 2), 1, 2, ws64);
  check<false, 64, 3>(make(5, 40, {72, 136, 1}, {true, true, false}, false, 3), 2, 1, ws64);
  check<false, 32, 3>(make(70, 40, {72, 136, 1}, {true, true, false}, false, 4), 4, 1, ws32);
  check<true, 64, 3>(make(70, 40, {72, 136, 1}, {true, true, false}, true, 5), 2, 1, ws64_f16);
  // DLRM-v2's dense tail in miniature: two cross layers of rank 16 over width 40 (V without bias,
  // W with x0 * (.) + x_l, its residual read back from the buffer it writes), then 24-1; and a lone
  // cross layer, whose residual is the chain's input.
  std::vector<unsigned char> ws_cross, ws_cross32, ws_cross_f16, ws_one;
  auto [widths, epi] = mlp_chain_test::cross_then_top(40, 2, 16, {24, 1});
  check<false, 64, 6>(mlp_chain_test::random_chain_case(70, 40, widths, epi, DType::BF16, 11), 3, 1, ws_cross);
  check<false, 64, 6>(mlp_chain_test::random_chain_case(130, 40, widths, epi, DType::BF16, 12), 1, 1, ws_cross);
  check<false, 32, 6>(mlp_chain_test::random_chain_case(70, 40, widths, epi, DType::BF16, 13), 4, 2, ws_cross32);
  check<true, 64, 6>(mlp_chain_test::random_chain_case(70, 40, widths, epi, DType::F16, 14), 2, 1, ws_cross_f16);
  auto [w1, e1] = mlp_chain_test::cross_then_top(72, 1, 8, {});
  check<false, 64, 2>(mlp_chain_test::random_chain_case(65, 72, w1, e1, DType::BF16, 15), 2, 1, ws_one);
  // Two layers, both ReLU, wide k (several k tiles through the 4-stage ring), more blocks than tiles.
  check<false, 32, 2>(make(33, 264, {64, 24}, {true, true}, false, 6), 3, 4, ws_two);
  check<false, 32, 2>(make(65, 264, {64, 24}, {true, true}, false, 7), 3, 4, ws_two);
  check<true, 32, 2>(make(33, 264, {64, 24}, {true, true}, true, 8), 1, 4, ws_two_f16);
}

}  // namespace
}  // namespace luminal
