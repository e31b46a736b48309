// The GEMV choice point of cuBLASLt matmuls (gemv@N): offered where B runs along k (a Linear's
// [n, k] weight), "yes" by default (MatmulStep::gemv_max_m = 8: the runtime then runs the GEMV
// kernel at m <= 8), "no" keeps cuBLASLt only; a [k, n] row-major B gets no point.
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "cuda/codegen/kernels.h"
#include "compiler/kernel_plan.h"
#include "compiler/search/candidate.h"
#include "luminal/tensor.h"

namespace luminal {
namespace {

using compiler::MatmulStep;

// The plan's matmul steps and the gemv@ keys asked while lowering g.
std::pair<std::vector<MatmulStep>, std::vector<std::string>> lower_matmuls(
    const Graph& g, const compiler::search::Candidate& c = {}) {
  compiler::search::Choices choices(c);
  compiler::LowerOptions o;
  o.dim_hints = {{"s", 512}};
  o.choices = &choices;
  const compiler::KernelPlan p = cuda::codegen::lower_and_render(g, o);
  std::vector<MatmulStep> steps;
  for (const compiler::Step& s : p.steps)
    if (const auto* m = std::get_if<MatmulStep>(&s)) steps.push_back(*m);
  std::vector<std::string> keys;
  for (const auto& pt : choices.points())
    if (pt.key.starts_with("gemv@")) keys.push_back(pt.key);
  return {steps, keys};
}

TEST(GemvChoice, ALinearWeightGetsTheGemvPathAndNoTurnsItOff) {
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    Graph g;
    GraphTensor x = g.named_tensor("x", {Expr::sym("s"), 256}, dt);
    GraphTensor w = g.named_tensor("w", {128, 256}, dt);
    x.matmul(w.transpose(0, 1)).output();
    auto [steps, keys] = lower_matmuls(g);
    ASSERT_EQ(steps.size(), 1u) << dtype_name(dt);
    EXPECT_EQ(steps[0].gemv_max_m, 8) << dtype_name(dt);
    ASSERT_EQ(keys.size(), 1u);
    compiler::search::Candidate off;
    off.picks[keys[0]] = "no";
    auto [no_steps, no_keys] = lower_matmuls(g, off);
    ASSERT_EQ(no_steps.size(), 1u);
    EXPECT_EQ(no_steps[0].gemv_max_m, 0) << dtype_name(dt);
  }
}

TEST(GemvChoice, ARowMajorKByNOperandOrAnF64MatmulGetsNoPoint) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {Expr::sym("s"), 256});
  GraphTensor b = g.named_tensor("b", {256, 128});  // [k, n]: n is contiguous, not k
  x.matmul(b).output();
  GraphTensor x64 = g.named_tensor("x64", {Expr::sym("s"), 256}, DType::F64);
  GraphTensor w64 = g.named_tensor("w64", {128, 256}, DType::F64);
  x64.matmul(w64.transpose(0, 1)).output();
  auto [steps, keys] = lower_matmuls(g);
  ASSERT_EQ(steps.size(), 2u);
  for (const MatmulStep& m : steps) EXPECT_EQ(m.gemv_max_m, 0);
  EXPECT_TRUE(keys.empty());
}

}  // namespace
}  // namespace luminal
