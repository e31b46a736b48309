// nn::rope_inv_freq (plain and llama3), rope_tables, apply_rope, rms_norm and causal_attention on
// the reference runtime. Every expected value is computed by hand (the formulas in the comments).
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>
#include <vector>

#include "expect_error.h"
#include "luminal/reference.h"
#include "luminal/nn.h"

namespace luminal::nn {
namespace {

using Floats = std::vector<float>;
using test::expect_error;

TEST(Rope, PlainInvFreqIsThetaToTheMinusTwoIOverD) {
  // d = 4, theta = 10000: 1 / 10000^(0/4) = 1, 1 / 10000^(2/4) = 0.01.
  const Floats f = rope_inv_freq(RopeConfig{}, 4);
  ASSERT_EQ(f.size(), 2u);
  EXPECT_FLOAT_EQ(f[0], 1.0f);
  EXPECT_FLOAT_EQ(f[1], 0.01f);
  expect_error([] { rope_inv_freq(RopeConfig{}, 5); }, {"[rope]", "even"});
}

TEST(Rope, Llama3ScalingKeepsHighDividesLowAndBlendsTheMiddle) {
  // d = 8, theta = 10000: inv = 1, 0.1, 0.01, 0.001; wavelengths 2 pi / inv = 6.28, 62.8, 628,
  // 6283. original 64, low 1, high 4: low_freq_wavelen 64, high_freq_wavelen 16, factor 8.
  RopeConfig c;
  c.type = RopeType::Llama3;
  c.factor = 8;
  c.low_freq_factor = 1;
  c.high_freq_factor = 4;
  c.original_max_position_embeddings = 64;
  const Floats f = rope_inv_freq(c, 8);
  ASSERT_EQ(f.size(), 4u);
  EXPECT_FLOAT_EQ(f[0], 1.0f);  // 6.28 < 16: unchanged
  // 16 <= 62.8 <= 64: smooth = (64 / 62.8 - 1) / (4 - 1), (1 - smooth) * 0.1 / 8 + smooth * 0.1.
  const double smooth = (64.0 / (2 * std::numbers::pi / 0.1) - 1.0) / 3.0;
  EXPECT_NEAR(f[1], (1 - smooth) * 0.1 / 8 + smooth * 0.1, 1e-8);
  EXPECT_FLOAT_EQ(f[2], 0.01f / 8);  // 628 > 64: divided by the factor
  EXPECT_FLOAT_EQ(f[3], 0.001f / 8);
  c.high_freq_factor = 0.5;
  expect_error([&] { rope_inv_freq(c, 8); },
               {"[rope] llama3", "low_freq_factor < high_freq_factor"});
}

TEST(Rope, TablesHoldCosAndSinOfPositionTimesFrequency) {
  const RopeTables t = rope_tables(Floats{1.0f, 0.5f}, 3);
  ASSERT_EQ(t.cos.size(), 6u);
  EXPECT_FLOAT_EQ(t.cos[0], 1.0f);  // position 0
  EXPECT_FLOAT_EQ(t.sin[1], 0.0f);
  EXPECT_FLOAT_EQ(t.cos[4], static_cast<float>(std::cos(2.0)));  // position 2, frequency 1
  EXPECT_FLOAT_EQ(t.sin[5], static_cast<float>(std::sin(1.0)));  // position 2, frequency 0.5
}

TEST(Rope, RotatesHalvesLikeRotateHalf) {
  // x = [1, 2, 3, 4] (one position, one head), cos = [c0, c1], sin = [s0, s1]:
  // out = [1 c0 - 3 s0, 2 c1 - 4 s1, 3 c0 + 1 s0, 4 c1 + 2 s1].
  Graph g;
  GraphTensor x = g.named_tensor("x", {1, 1, 4});
  GraphTensor c = g.named_tensor("cos", {1, 2}), s = g.named_tensor("sin", {1, 2});
  GraphTensor y = apply_rope(x, c, s).output();
  ReferenceRuntime rt(g);
  const float c0 = std::cos(0.3f), c1 = std::cos(0.7f), s0 = std::sin(0.3f), s1 = std::sin(0.7f);
  rt.set_data(x, std::span<const float>(Floats{1, 2, 3, 4}));
  rt.set_data(c, std::span<const float>(Floats{c0, c1}));
  rt.set_data(s, std::span<const float>(Floats{s0, s1}));
  rt.execute();
  const Floats out = rt.get_f32(y);
  const Floats want{1 * c0 - 3 * s0, 2 * c1 - 4 * s1, 3 * c0 + 1 * s0, 4 * c1 + 2 * s1};
  for (size_t i = 0; i < 4; ++i) EXPECT_NEAR(out[i], want[i], 1e-6) << i;
}

TEST(RmsNorm, ScalesByWeightAfterNormalizing) {
  // x = [3, 4]: mean(x^2) = 12.5, x / sqrt(12.5) = [0.8485, 1.1314]; weight [1, 2].
  Graph g;
  GraphTensor x = g.named_tensor("x", {1, 2}), w = g.named_tensor("w", {2});
  GraphTensor y = rms_norm(x, w, 0.0).output();
  ReferenceRuntime rt(g);
  rt.set_data(x, std::span<const float>(Floats{3, 4}));
  rt.set_data(w, std::span<const float>(Floats{1, 2}));
  rt.execute();
  const Floats out = rt.get_f32(y);
  EXPECT_NEAR(out[0], 3 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(out[1], 2 * 4 / std::sqrt(12.5), 1e-6);
}

// q [s, 2 heads, 1], k, v [t, 1 kv head, 1], scale 1.
Floats attend(const Floats& q, const Floats& k, const Floats& v, const std::vector<int32_t>& pos) {
  Graph g;
  const auto s = static_cast<int64_t>(pos.size()), t = static_cast<int64_t>(k.size());
  GraphTensor qt = g.named_tensor("q", {s, 2, 1}), kt = g.named_tensor("k", {t, 1, 1});
  GraphTensor vt = g.named_tensor("v", {t, 1, 1}), pt = g.named_tensor("pos", {s}, DType::I32);
  GraphTensor y = causal_attention(qt, kt, vt, pt, 1.0).output();
  ReferenceRuntime rt(g);
  rt.set_data(qt, std::span<const float>(q));
  rt.set_data(kt, std::span<const float>(k));
  rt.set_data(vt, std::span<const float>(v));
  rt.set_data(pt, std::span<const int32_t>(pos));
  rt.execute();
  return rt.get_f32(y);
}

TEST(CausalAttention, QueriesSeeOnlyKeysUpToTheirPosition) {
  // Both query heads share the one kv head. k = [0, ln 3]: query 0 (position 0) sees key 0 only
  // -> v0 = 10; query 1 (position 1) with q = 1 weighs e^0 : e^ln3 = 1 : 3 -> (10 + 3 * 20) / 4;
  // with q = 0 it weighs them equally -> 15.
  const Floats out = attend({1, 0, 1, 0}, {0, std::log(3.0f)}, {10, 20}, {0, 1});
  ASSERT_EQ(out.size(), 4u);
  EXPECT_NEAR(out[0], 10, 1e-5);
  EXPECT_NEAR(out[1], 10, 1e-5);
  EXPECT_NEAR(out[2], 17.5, 1e-5);
  EXPECT_NEAR(out[3], 15, 1e-5);
}

TEST(CausalAttention, ADecodeQueryAtTheLastPositionSeesTheWholeCache) {
  // One query at position 2 over three keys, q = 0: the mean of v = 2.
  const Floats out = attend({0, 0}, {5, -5, 1}, {1, 2, 3}, {2});
  EXPECT_NEAR(out[0], 2, 1e-5);
  EXPECT_NEAR(out[1], 2, 1e-5);
  expect_error(
      [] {
        Graph g;
        causal_attention(g.named_tensor("q", {1, 3, 2}), g.named_tensor("k", {1, 2, 2}),
                         g.named_tensor("v", {1, 2, 2}), g.named_tensor("p", {1}, DType::I32), 1);
      },
      {"[attention]", "multiple of kv heads"});
}

}  // namespace
}  // namespace luminal::nn
