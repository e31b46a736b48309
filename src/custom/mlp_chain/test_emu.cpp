// The MlpChain kernel (mlp_chain.cuh) run by the host emulation (tests/emu) against the loop
// oracle: the generated entry's workspace layout, tickets and per-row-block waits with blocks
// running together and one at a time, partial row / column / k tiles, a last layer one wide, both
// tile heights, bf16 and f16, and the counters left zero for the next launch (run twice, at two
// batches, over one workspace).
#include <gtest/gtest.h>

#include <regex>

#include "custom/mlp_chain/mlp_chain.cuh"
#include "custom/mlp_chain/test_util.h"

namespace luminal {
namespace {

using mlp_chain_test::Case;

std::vector<uint16_t> bits(const std::vector<float>& v, bool f16) { return emu::bits16(v, f16); }

// The chain of `c` through the emitted launch (grid, shared bytes, workspace size) with the
// generated entry's arguments and layer table, read from its source; `ws` is the step's workspace.
template <bool F16, int BM, int L>
std::vector<float> run(const Case& c, unsigned together, std::vector<unsigned char>& ws, int sm_count,
                       bool expect_split) {
  std::vector<bool> bias;
  for (const auto& b : c.b) bias.push_back(!b.empty());
  custom::MlpChainShape s{c.k, c.widths, c.epi, bias, c.dt, BM};
  const CustomKernel k = custom::emit_mlp_chain(s, c.m, sm_count);
  int64_t hidden = 0;
  for (size_t l = 0; l + 1 < c.widths.size(); ++l) hidden = std::max(hidden, c.widths[l]);
  std::smatch args;
  EXPECT_TRUE(std::regex_search(k.source, args, std::regex(R"(workspace, (\d+), (\d+), (\d+), (\d+)\);)")))
      << k.source;
  const int row_cap = std::stoi(args[1]), split_below = std::stoi(args[4]);
  const long long act_offset = std::stoll(args[2]);
  EXPECT_EQ(row_cap, custom::kMlpChainMaxRows / BM);
  EXPECT_EQ(std::stoll(args[3]), hidden) << "every intermediate layer's rows one stride apart";
  EXPECT_NE(k.source.find(fmt::format("mlp_chain::run<{}, {}, {}>", F16 ? "true" : "false", BM, L)), std::string::npos);
  EXPECT_EQ(k.shared_bytes, unsigned(mlp_chain::shared_bytes<BM, L>()));
  static_assert(sizeof(mlp_chain::Layer) == 40, "emit.cpp counts 40 bytes a layer");
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
  bool split = false;
  for (int l = 0; l < L; ++l) {
    const size_t i = size_t(l);
    // The generated entry's table row: this layer's bias, widths and epilogue, and its k split.
    std::smatch row;
    const std::string bias_text = b[i].empty() ? "nullptr" : fmt::format("static_cast<const unsigned short\\*>\\(b{}\\)", l);
    EXPECT_TRUE(std::regex_search(k.source, row, std::regex(fmt::format(R"(\(w{}\), {}, {}, {}, {}, (\d+), (\d+)\}})", l,
                                                                       bias_text, c.widths[i], s.in_width(i), int(c.epi[i])))))
        << "layer " << l << "\n" << k.source;
    const int slices = row.empty() ? 1 : std::stoi(row[1]), slice_k = row.empty() ? 0 : std::stoi(row[2]);
    EXPECT_EQ(slice_k % 32, 0);
    EXPECT_GE(int64_t(slices) * slice_k, s.in_width(i));
    EXPECT_LT(int64_t(slices - 1) * slice_k, s.in_width(i)) << "no empty slice";
    const int tiles = int((c.m + BM - 1) / BM * ((c.widths[i] + 63) / 64));
    split |= slices > 1 && tiles < split_below;
    layers[l] = {w[i].data(), b[i].empty() ? nullptr : b[i].data(), int(c.widths[i]), int(s.in_width(i)), int(c.epi[i]),
                 slices, slice_k};
  }
  EXPECT_EQ(split, expect_split) << "a layer's k split at this batch";
  std::vector<uint16_t> out(size_t(c.m * c.widths.back()), 0x7fc1);  // poison: NaN in both formats
  emu::launch(k.grid[0], k.block[0], k.shared_bytes, together, [&] {
    mlp_chain::run<F16, BM, L>(x.data(), out.data(), layers, c.m, ws.data(), row_cap, act_offset, hidden, split_below);
  });
  for (size_t i = k.workspace_bytes; i < ws.size(); ++i) EXPECT_EQ(ws[i], 0x5A) << "written past the workspace";
  for (size_t i = 0; i < size_t(act_offset); ++i) EXPECT_EQ(ws[i], 0) << "counter byte " << i << " left nonzero";
  std::vector<float> got;
  for (uint16_t h : out) got.push_back(F16 ? f16_bits_to_f32(h) : bf16_bits_to_f32(h));
  return got;
}

template <bool F16, int BM, int L>
void check(Case c, unsigned together, int sm_count, std::vector<unsigned char>& ws, bool expect_split = false) {
  static_assert(int(custom::ChainEpilogue::Relu) == mlp_chain::kRelu && int(custom::ChainEpilogue::Cross) == mlp_chain::kCross);
  SCOPED_TRACE(fmt::format("m {} k {} layers {} {} tile {} blocks together {} sm_count {}", c.m, c.k,
                           fmt::join(c.widths, "-"), F16 ? "f16" : "bf16", BM, together, sm_count));
  const std::vector<float> got = run<F16, BM, L>(c, together, ws, sm_count, expect_split);
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
  // Layers of k >= 1536 and fewer tiles than two waves split k: slices write fp32 partial sums and
  // the last to arrive finishes the tile. A Linear chain (1536 -> 64 -> 24), and a cross layer over
  // width 1536 (V split, W not) before a split 1536 -> 8 layer; once more at a batch where none
  // splits (sm_count 1: two waves are 2 tiles).
  std::vector<unsigned char> ws_split, ws_split_cross;
  check<false, 32, 2>(make(40, 1536, {64, 24}, {true, false}, false, 16), 3, 4, ws_split, true);
  check<false, 32, 2>(make(40, 1536, {64, 24}, {true, false}, false, 17), 1, 4, ws_split, true);
  check<false, 32, 2>(make(70, 1536, {64, 24}, {true, false}, false, 18), 2, 1, ws_split, false);
  auto [w2, e2] = mlp_chain_test::cross_then_top(1536, 1, 16, {8});
  check<false, 64, 3>(mlp_chain_test::random_chain_case(33, 1536, w2, e2, DType::BF16, 19), 3, 8, ws_split_cross, true);
  check<true, 64, 3>(mlp_chain_test::random_chain_case(33, 1536, w2, e2, DType::F16, 20), 2, 8, ws_split_cross, true);
  // DLRM-v2's dense tail's structure: three cross layers over width 1024 (each V split in 2, each W's
  // residual the buffer it overwrites, the first W's the chain's input), then a split top layer.
  std::vector<unsigned char> ws_tail;
  auto [w3, e3] = mlp_chain_test::cross_then_top(1024, 3, 16, {32, 16, 1});
  check<false, 64, 9>(mlp_chain_test::random_chain_case(70, 1024, w3, e3, DType::BF16, 21), 4, 8, ws_tail, true);
  check<false, 64, 9>(mlp_chain_test::random_chain_case(70, 1024, w3, e3, DType::BF16, 22), 2, 8, ws_tail, true);
  // Two layers, both ReLU, wide k (several k tiles through the 4-stage ring), more blocks than tiles.
  check<false, 32, 2>(make(33, 264, {64, 24}, {true, true}, false, 6), 3, 4, ws_two);
  check<false, 32, 2>(make(65, 264, {64, 24}, {true, true}, false, 7), 3, 4, ws_two);
  check<true, 32, 2>(make(33, 264, {64, 24}, {true, true}, true, 8), 1, 4, ws_two_f16);
}

}  // namespace
}  // namespace luminal
