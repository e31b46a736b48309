// The lowering's alternatives as the search sees them: on random small graphs every option of
// every choice point (and seeded mixes) lowers to a plan whose kernels NVRTC compiles, and each
// pick changes the plan the way it says (no GPU needed; the GPU suite runs them).
#include <variant>

#include <gtest/gtest.h>

#include "cuda/codegen/kernels.h"
#include "nvrtc/nvrtc_compile.h"
#include "search_graphs.h"

namespace luminal {
namespace {

using compiler::MatmulStep;
using compiler::search::Candidate;

size_t matmul_steps(const compiler::KernelPlan& p) {
  size_t n = 0;
  for (const auto& s : p.steps) n += std::holds_alternative<MatmulStep>(s);
  return n;
}

TEST(SearchCandidates, EveryOptionOfRandomGraphsLowersAndCompiles) {
  size_t tried = 0;
  for (unsigned seed = 1; seed <= 8; ++seed) {
    auto r = test::random_graph(seed);
    const auto points = test::all_lowering_points(r->g);
    ASSERT_FALSE(points.empty()) << "seed " << seed << ": a Linear chain has matmul points";
    for (const Candidate& c : test::candidates_to_try(points, 2, seed)) {
      compiler::search::Choices choices(c);
      compiler::LowerOptions opts;
      opts.choices = &choices;
      const compiler::KernelPlan plan = cuda::codegen::lower_and_render(r->g, opts);
      for (const auto& s : plan.steps)
        if (const auto* k = std::get_if<compiler::KernelStep>(&s))
          ASSERT_TRUE(test::nvrtc_compiles(k->source, k->name)) << c.to_string();
      ++tried;
    }
  }
  EXPECT_GT(tried, 30u);
}

TEST(SearchCandidates, MatmulBackendAndEpiloguePicksChangeThePlan) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {512, 256});
  GraphTensor w = g.named_tensor("w", {256, 512}).persist();
  GraphTensor b = g.named_tensor("b", {512}).persist();
  (x.matmul(w) + b).relu().output();
  const auto points = test::lowering_points(g);
  const std::string sum = [&] {
    for (const auto& p : points)
      if (p.key.rfind("matmul@", 0) == 0) return p.key.substr(7);
    return std::string();
  }();
  ASSERT_FALSE(sum.empty());
  auto plan_for = [&g](const Candidate& c) {
    compiler::search::Choices choices(c);
    compiler::LowerOptions opts;
    opts.choices = &choices;
    return cuda::codegen::lower_and_render(g, opts);
  };
  const auto heuristic = plan_for({});
  ASSERT_EQ(matmul_steps(heuristic), 1u);  // 2*512*512*256 flops: above the cuBLASLt floor
  const auto& fused = std::get<MatmulStep>(heuristic.steps.at(0));
  EXPECT_GE(fused.bias, 0);
  EXPECT_TRUE(fused.relu);
  EXPECT_EQ(matmul_steps(plan_for({{{"matmul@" + sum, "generated"}}})), 0u);
  const auto separate = plan_for({{{"epilogue@" + sum, "separate"}}});
  ASSERT_EQ(matmul_steps(separate), 1u);
  for (const auto& s : separate.steps)
    if (const auto* m = std::get_if<MatmulStep>(&s)) EXPECT_TRUE(m->bias < 0 && !m->relu);
  EXPECT_GT(separate.steps.size(), heuristic.steps.size());  // the bias + ReLU kernel
  for (const auto& s : plan_for({{{"algo@" + sum, "2"}}}).steps)
    if (const auto* m = std::get_if<MatmulStep>(&s)) EXPECT_EQ(m->algo, 2);
}

}  // namespace
}  // namespace luminal
