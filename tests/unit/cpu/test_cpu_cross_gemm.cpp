// CrossGemm (a DCNv2 cross layer's x0 * (u W^T + b) + x_l) on the CPU backend, outputs poisoned
// first: one oneDNN matmul with binary post-ops (f32, and bf16 where this CPU has a bf16 primitive;
// else its decomposition) against the double loop, the batch changing between executes; and the
// cross_layer rule taking it in a two-layer network, equal to the graph as written.
#include <cmath>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cpu_test_util.h"

#include "custom/cross_gemm/test_util.h"
#include "luminal/nn.h"
#include "luminal/reference.h"

namespace luminal {
namespace {

namespace ct = cross_gemm_test;

TEST(CpuCrossGemm, MatchesLoopsAsTheBatchChanges) {
  for (DType dt : {DType::F32, DType::BF16}) {
    const ct::Case first = ct::random_case(37, 72, 24, dt, 9);
    Graph g;
    const ct::Bound b = ct::build(g, first, /*dynamic=*/true);
    const auto rt = cpu_test::cpu_plan(g);
    for (int64_t m : {37, 1, 130}) {
      const ct::Case c = ct::random_case(m, 72, 24, dt, uint32_t(m));
      ct::set_inputs(*rt, b, c);
      rt->execute({{"m", m}});
      // oneDNN rounds once (bf16) or not at all (f32); the decomposition rounds after each op.
      const double rtol = dt == DType::F32 ? 1e-6 : 4.0 / 256;
      EXPECT_EQ(ct::mismatch(rt->get_f32(b.out), ct::loops(c), ct::magnitudes(c), 1e-6, rtol), "")
          << dtype_name(dt) << " batch " << m;
    }
    const std::string step = rt->stats().steps.at(0);
    if (dt == DType::F32 && __builtin_cpu_supports("avx512f")) {
      EXPECT_NE(step.find("cross_gemm (host kernel)"), std::string::npos) << step;
    }
  }
}

TEST(CpuCrossGemm, RuleFusesEveryCrossLayerAndMatchesTheReference) {
  Graph g;
  const GraphTensor x0 = g.named_tensor("x0", {Expr::sym("m"), 40});
  GraphTensor x = x0;
  std::vector<GraphTensor> params;
  for (int l = 0; l < 3; ++l) {
    params.push_back(g.named_tensor(fmt::format("v{}", l), {16, 40}));
    params.push_back(g.named_tensor(fmt::format("w{}", l), {40, 16}));
    params.push_back(g.named_tensor(fmt::format("b{}", l), {40}));
    x = nn::low_rank_cross(x0, x, params[size_t(3 * l)], params[size_t(3 * l + 1)], params[size_t(3 * l + 2)]);
  }
  const GraphTensor out = x.output();
  const auto rt = cpu_test::cpu_plan(g);
  ReferenceRuntime ref(g);
  const ct::Case c = ct::random_case(9, 40, 16, DType::F32, 4);
  for (Runtime* r : {static_cast<Runtime*>(rt.get()), static_cast<Runtime*>(&ref)}) {
    r->set_data(x0, std::span<const float>(c.x0));
    for (int l = 0; l < 3; ++l) {
      r->set_data(params[size_t(3 * l)], std::span<const float>(c.w));  // V [16, 40]: W's count
      r->set_data(params[size_t(3 * l + 1)], std::span<const float>(c.w));
      r->set_data(params[size_t(3 * l + 2)], std::span<const float>(c.b));
    }
    r->execute({{"m", 9}});
  }
  const std::vector<float> got = rt->get_f32(out), want = ref.get_f32(out);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 * (1 + std::abs(want[i]))) << i;
  size_t fused = 0, kernels = 0;
  for (const std::string& s : rt->stats().steps) {
    fused += s.find("custom cross_gemm") != std::string::npos;
    kernels += s.find("cross_gemm (host kernel)") != std::string::npos;
  }
  EXPECT_EQ(fused, 3u) << "the rule takes every cross layer on the CPU backend";
  // oneDNN's brgemm matmul takes f32 with binary post-ops on AVX-512 CPUs (checked there); elsewhere the
  // kernel may decline to the decomposition, which the values above cover.
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_EQ(kernels, 3u);
  }
}

}  // namespace
}  // namespace luminal
