// CausalAttention on the CPU reference runtime: the op (its decomposition) against a plain-loop
// oracle and against nn::causal_attention, decode and prefill shapes, GQA, masked keys, f32 and
// bf16; the kernel guard and the generated source (no GPU needed).
#include <gtest/gtest.h>

#include <cmath>

#include "custom/attention/test_util.h"
#include "luminal/reference.h"
#include "test_caps.h"

namespace luminal {
namespace {

using attention_test::Case;

std::vector<float> run_cpu(const Case& c, bool fused) {
  Graph g;
  const attention_test::Bound b = attention_test::build(g, c, fused);
  ReferenceRuntime rt(g);
  attention_test::set_inputs(rt, b, c);
  rt.execute();
  return rt.get_f32(b.out);
}

// A bf16 result is rounded (scores and probabilities too, in the decomposition).
double tol(const Case& c) { return c.dtype == DType::BF16 ? 3e-2 : 1e-5; }

std::vector<Case> cases() {
  std::vector<Case> out;
  for (DType dt : {DType::F32, DType::BF16}) {
    // Decode: one query, the cache filled to 5 of 12 (7 masked keys); group 4 (Llama 3.2 1B's).
    out.push_back({1, 12, 8, 2, 64, dt, {4}, 3});
    // Prefill: 6 queries at 0..5 of an 9-key cache; group 2, d 128.
    out.push_back({6, 9, 4, 2, 128, dt, attention_test::positions(6, 6), 5});
    // Mixed positions, no grouping.
    out.push_back({3, 7, 2, 2, 64, dt, {6, 0, 3}, 7});
  }
  return out;
}

TEST(CausalAttentionOp, MatchesLoopsAndNnCausalAttention) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(fmt::format("s {} t {} H {} KV {} d {} {}", c.s, c.t, c.heads, c.kv_heads, c.dim,
                             dtype_name(c.dtype)));
    const std::vector<float> op = run_cpu(c, true), nn = run_cpu(c, false);
    const std::vector<double> want = attention_test::loops(c);
    ASSERT_EQ(op.size(), want.size());
    double energy = 0;
    for (size_t i = 0; i < op.size(); ++i) {
      ASSERT_EQ(op[i], nn[i]) << "element " << i;  // the decomposition is nn::causal_attention
      ASSERT_NEAR(op[i], want[i], tol(c) * (1 + std::abs(want[i]))) << "element " << i;
      energy += std::abs(want[i]);
    }
    EXPECT_GT(energy, 0.1 * double(op.size()));  // not a zero result
  }
}

TEST(CausalAttentionOp, MaskedKeysDoNotContribute) {
  // Changing v after a query's position must leave that query's output alone.
  Case c{1, 10, 4, 1, 64, DType::F32, {3}, 11};
  const std::vector<float> a = run_cpu(c, true);
  Graph g;
  const attention_test::Bound b = attention_test::build(g, c, true);
  ReferenceRuntime rt(g);
  attention_test::set_inputs(rt, b, c);
  std::vector<float> v = attention_test::data_of(c).v;
  for (size_t i = size_t(4 * c.kv_heads * c.dim); i < v.size(); ++i) v[i] = 1e3f;
  rt.set_data(b.v, std::span<const float>(v));
  rt.execute();
  EXPECT_EQ(rt.get_f32(b.out), a);
}

TEST(CausalAttentionOp, KernelGuard) {
  const custom::CausalAttention op(0.125);
  const std::vector<std::vector<int64_t>> dims{{1, 32, 64}, {640, 8, 64}, {640, 8, 64}, {1}};
  EXPECT_TRUE(test::cuda_kernel_for(op, dims, {DType::BF16, DType::BF16, DType::BF16, DType::I32}));
  EXPECT_TRUE(test::cuda_kernel_for(op, dims, {DType::F32, DType::F32, DType::F32, DType::I64}));
  EXPECT_FALSE(test::cuda_kernel_for(op, dims, {DType::F16, DType::F16, DType::F16, DType::I32}));
  EXPECT_FALSE(test::cuda_kernel_for(op, dims, {DType::F32, DType::BF16, DType::F32, DType::I32}));
  EXPECT_FALSE(test::cuda_kernel_for(op, {{1, 32, 96}, {640, 8, 96}, {640, 8, 96}, {1}},
                              {DType::F32, DType::F32, DType::F32, DType::I32}));
  EXPECT_FALSE(test::cuda_kernel_for(op, {{1, 32, 64}, {640, 2, 64}, {640, 2, 64}, {1}},
                              {DType::F32, DType::F32, DType::F32, DType::I32}));  // group 16
  EXPECT_EQ(custom::why_unsupported({32, 8, 96, DType::F32, DType::I32}),
            "head dim 96 (the kernel runs 64 and 128)");
}

// One source per kind of launch (decode: key splits; prefill: one block per query and kv head),
// whatever the sequence lengths; the grid and workspace carry s, t and the splits.
TEST(CausalAttentionOp, SourceIndependentOfSequenceLengths) {
  const custom::CausalAttention op(0.125);
  const std::vector<DType> dt{DType::BF16, DType::BF16, DType::BF16, DType::I32};
  auto kernel = [&](int64_t s, int64_t t) {
    const auto k = test::cuda_kernel_for(op, {{s, 32, 64}, {t, 8, 64}, {t, 8, 64}, {s}}, dt);
    EXPECT_TRUE(k.has_value());
    return *k;
  };
  const CustomKernel d640 = kernel(1, 640), d1024 = kernel(1, 1024), d2 = kernel(2, 300);
  const CustomKernel p512 = kernel(512, 1024), p64 = kernel(64, 640);
  EXPECT_EQ(d640.source, d1024.source);
  EXPECT_EQ(d640.source, d2.source);
  EXPECT_EQ(p512.source, p64.source);
  EXPECT_NE(d640.source, p512.source);
  EXPECT_EQ(d640.grid[0], 1u);
  EXPECT_EQ(p512.grid[0], 512u);
  EXPECT_EQ(d640.grid[1], 8u);
  // Decode: 264 / 8 = 33 splits wanted, capped at one per 32 keys: 20 at t = 640, 32 at 1024.
  EXPECT_EQ(d640.grid[2], 20u);
  EXPECT_EQ(d1024.grid[2], 32u);
  EXPECT_EQ(d2.grid[2], 10u);  // 16 blocks: 17 wanted, 10 of 30 keys
  EXPECT_EQ(p512.grid[2], 1u);
  EXPECT_EQ(p64.grid[2], 1u);  // 512 blocks already
  // s * KV counters (16-byte padded), then per split and head {max, sum, d accumulators}.
  EXPECT_EQ(d640.workspace_bytes, size_t(32 + 8 * 20 * 4 * 66 * 4));
  EXPECT_EQ(p512.workspace_bytes, 0u);
  EXPECT_NE(d640.source.find("#include \"causal_attention.cuh\""), std::string::npos);
}

}  // namespace
}  // namespace luminal
