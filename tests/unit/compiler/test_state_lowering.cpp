// States (output_into) in the CUDA lowering: a Scatter that is its state input's only reader
// writes into the input's buffer (no copy of the dest, no Output buffer); any other next value
// gets its own buffer and a last step copying it into the input's.
#include <string>
#include <variant>

#include <gtest/gtest.h>

#include "cuda/codegen/kernels.h"
#include "compiler/kernel_plan.h"
#include "luminal/tensor.h"

namespace luminal {
namespace {

using compiler::KernelPlan;
using compiler::KernelStep;

std::vector<const KernelStep*> kernels(const KernelPlan& p) {
  std::vector<const KernelStep*> ks;
  for (const compiler::Step& s : p.steps)
    if (const auto* k = std::get_if<KernelStep>(&s)) ks.push_back(k);
  return ks;
}

TEST(StateLowering, AScatterIntoItsStateWritesTheInputBufferInPlace) {
  Graph g;
  GraphTensor cache = g.named_tensor("cache", {8, 2, 4});
  GraphTensor pos = g.named_tensor("pos", {Expr::sym("s")}, DType::I32);
  GraphTensor rows = g.named_tensor("rows", {Expr::sym("s"), 2, 4});
  GraphTensor next = cache.scatter(pos, rows);
  GraphTensor total = next.sum(0).output();
  next.output_into(cache);
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const int in = p.buffer_of_node[cache.id];
  ASSERT_GE(in, 0);
  EXPECT_EQ(p.buffers[size_t(in)].kind, compiler::PlanBuffer::Kind::Input);
  EXPECT_EQ(p.buffer_of_node[next.node().inputs[0].node], in);  // the Scatter's buffer
  EXPECT_EQ(p.buffer_of_node[next.id], -1);                     // the state Output has none
  int writers = 0;
  for (const KernelStep* k : kernels(p)) {
    EXPECT_EQ(k->name.find("dest"), std::string::npos) << "a copy of the cache: " << k->name;
    for (int b : k->writes) writers += b == in ? 1 : 0;
  }
  EXPECT_EQ(writers, 1);  // only the scatter's rows kernel
  EXPECT_GE(p.buffer_of_node[total.id], 0);
}

TEST(StateLowering, ACacheWithAnotherReaderIsNotScatteredInPlace) {
  Graph g;
  GraphTensor cache = g.named_tensor("cache", {8, 4});
  GraphTensor pos = g.named_tensor("pos", {1}, DType::I32);
  GraphTensor rows = g.named_tensor("rows", {1, 4});
  GraphTensor before = cache.sum(0).output();  // reads the old value: the scatter must copy
  cache.scatter(pos, rows).output_into(cache);
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const int in = p.buffer_of_node[cache.id];
  const std::vector<const KernelStep*> ks = kernels(p);
  ASSERT_FALSE(ks.empty());
  bool dest_copy = false;
  for (const KernelStep* k : ks) dest_copy = dest_copy || k->name.find("dest") != std::string::npos;
  EXPECT_TRUE(dest_copy);
  // The next value is copied into the input's buffer by the plan's last step.
  ASSERT_EQ(ks.back()->writes, std::vector<int>{in});
  EXPECT_GE(p.buffer_of_node[before.id], 0);
}

TEST(StateLowering, AnInlineNextValueIsMaterializedThenCopiedLast) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {6});
  GraphTensor seen = (x * 2.0).output();
  (x + 1.0).output_into(x);
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const int in = p.buffer_of_node[x.id];
  const std::vector<const KernelStep*> ks = kernels(p);
  ASSERT_GE(ks.size(), 3u);  // seen, the materialized x + 1, the copy into x
  EXPECT_EQ(ks.back()->writes, std::vector<int>{in});
  for (size_t i = 0; i + 1 < ks.size(); ++i)
    for (int b : ks[i]->writes) EXPECT_NE(b, in) << ks[i]->name;
  EXPECT_GE(p.buffer_of_node[seen.id], 0);
}

}  // namespace
}  // namespace luminal
