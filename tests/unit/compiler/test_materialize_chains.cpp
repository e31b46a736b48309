// Deep shared chains (materialize@N): an inlined residual stream read by a reduction and by the
// next step is given a buffer once it reads kDeepChainLoads (3) buffers, so no kernel reloads
// every earlier term; "no" keeps it inlined; single-reader chains stay inlined.
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "cuda/codegen/kernels.h"
#include "compiler/kernel_plan.h"
#include "compiler/search/candidate.h"
#include "luminal/tensor.h"

namespace luminal {
namespace {

// x_i = x_{i-1} + t_i for 6 terms, each x_i also summed (a norm-like reader); returns the x_i.
std::vector<GraphTensor> residual(Graph& g) {
  GraphTensor x = g.named_tensor("x0", {4, 8});
  std::vector<GraphTensor> xs;
  for (int i = 1; i <= 6; ++i) {
    x = x + g.named_tensor("t" + std::to_string(i), {4, 8});
    x.sum(1).output();
    xs.push_back(x);
  }
  x.output();
  return xs;
}

TEST(MaterializeChains, AResidualStreamGetsBuffersAndTheChoiceCanKeepItInlined) {
  Graph g;
  const std::vector<GraphTensor> xs = residual(g);
  compiler::search::Choices heuristic;
  compiler::LowerOptions o;
  o.choices = &heuristic;
  const compiler::KernelPlan p = cuda::codegen::lower_and_render(g, o);
  // x1 = x0 + t1 reads 2 buffers: inlined; x2 = x1 + t2 reads 3: a buffer; then x3 (x2 + t3: 2)
  // inlined, x4 a buffer, ...
  EXPECT_EQ(p.buffer_of_node[xs[0].id], -1);
  EXPECT_GE(p.buffer_of_node[xs[1].id], 0);
  EXPECT_EQ(p.buffer_of_node[xs[2].id], -1);
  EXPECT_GE(p.buffer_of_node[xs[3].id], 0);
  std::vector<std::string> keys;
  for (const auto& pt : heuristic.points())
    if (pt.key.starts_with("materialize@")) keys.push_back(pt.key);
  ASSERT_EQ(keys.size(), 3u);  // x2, x4, x6
  EXPECT_EQ(keys[0], "materialize@" + std::to_string(xs[1].id));

  // "no" everywhere: a point answered no makes the next link deeper, which asks a new point;
  // answer those no too until none is new.
  compiler::search::Candidate keep;
  compiler::KernelPlan q;
  for (int round = 0; round < 8; ++round) {
    for (const std::string& k : keys) keep.picks[k] = "no";
    compiler::search::Choices inlined(keep);
    o.choices = &inlined;
    q = cuda::codegen::lower_and_render(g, o);
    keys.clear();
    for (const auto& pt : inlined.points())
      if (pt.key.starts_with("materialize@") && !keep.picks.contains(pt.key)) keys.push_back(pt.key);
    if (keys.empty()) break;
  }
  EXPECT_TRUE(keys.empty());
  for (const GraphTensor& x : xs) EXPECT_EQ(q.buffer_of_node[x.id], -1) << "node " << x.id;
}

TEST(MaterializeChains, ASingleReaderChainStaysInlined) {
  Graph g;
  GraphTensor x = g.named_tensor("x0", {4, 8});
  for (int i = 1; i <= 6; ++i) x = x + g.named_tensor("t" + std::to_string(i), {4, 8});
  x.sum(1).output();
  const compiler::KernelPlan p = cuda::codegen::lower_and_render(g);
  int kernels = 0;
  for (const compiler::Step& s : p.steps) kernels += std::holds_alternative<compiler::KernelStep>(s);
  EXPECT_EQ(kernels, 1);  // the reduction reads the whole chain inline
}

}  // namespace
}  // namespace luminal
