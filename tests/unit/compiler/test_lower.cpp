// Structure of lowered plans: which nodes are materialized, how many kernels a fused chain makes,
// matmul detection, Output aliasing, Custom steps, dynamic dims, and source readability.
#include <cstdlib>
#include <memory>
#include <variant>

#include <gtest/gtest.h>

#include <fmt/format.h>

#include "compiler/kernel_plan.h"
#include "custom/embedding_bag/op.h"
#include "cuda/codegen/dtype_code.h"
#include "cuda/codegen/kernels.h"
#include "luminal/compile.h"
#include "luminal/cpu.h"
#include "luminal/custom_op.h"
#include "luminal/reference.h"
#include "luminal/nn.h"
#include "luminal/tensor.h"

namespace luminal {
namespace {

using compiler::CustomStep;
using compiler::KernelArg;
using compiler::KernelPlan;
using compiler::KernelStep;
using compiler::LowerOptions;
using compiler::MatmulStep;

std::vector<const KernelStep*> kernels(const KernelPlan& p) {
  std::vector<const KernelStep*> out;
  for (const auto& s : p.steps) {
    if (const auto* k = std::get_if<KernelStep>(&s)) out.push_back(k);
  }
  return out;
}

std::vector<const MatmulStep*> matmuls(const KernelPlan& p) {
  std::vector<const MatmulStep*> out;
  for (const auto& s : p.steps) {
    if (const auto* m = std::get_if<MatmulStep>(&s)) out.push_back(m);
  }
  return out;
}

size_t count(const std::string& hay, const std::string& needle) {
  size_t n = 0;
  for (size_t p = hay.find(needle); p != std::string::npos; p = hay.find(needle, p + 1)) ++n;
  return n;
}

LowerOptions no_blas() {
  LowerOptions o;
  o.use_cublaslt = false;
  return o;
}

TEST(Lower, ElementwiseChainIsOneKernel) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4, 8});
  GraphTensor y = (((x * 2.0 + 1.0).exp2().sqrt()) * x).sin();  // 5 elementwise ops on x (+ constants)
  y.output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  ASSERT_EQ(p.steps.size(), 1u);
  const auto ks = kernels(p);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(p.buffers.size(), 2u);  // x and the Output, no intermediates
  for (size_t id = 0; id < g.size(); ++id) {
    const OpKind k = g.node(static_cast<NodeId>(id)).kind;
    EXPECT_EQ(p.buffer_of_node[id] >= 0, k == OpKind::Input || k == OpKind::Output) << "node " << id;
  }
  EXPECT_EQ(count(ks[0]->source, "extern \"C\" __global__"), 1u);
  EXPECT_EQ(count(ks[0]->source, "b0["), 1u);  // x is read once although used twice
  EXPECT_NE(ks[0]->source.find("// luminal kernel k"), std::string::npos);
  EXPECT_NE(ks[0]->source.find("%0 Input 'x'"), std::string::npos);
  EXPECT_TRUE(ks[0]->threads.same(Expr(32)));
  EXPECT_EQ(ks[0]->reads, std::vector<int>{0});
  EXPECT_EQ(ks[0]->writes, std::vector<int>{1});
}

// The flow is one way (issue 10 item 7): lower() decides every kernel as data (its spec) and
// renders no source; render() turns specs into sources without changing what the plan decided.
TEST(Lower, TheLoweringDecidesSpecsAndTheCodegenRendersThem) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {64, 300});
  GraphTensor idx = g.named_tensor("idx", {4}, DType::I32);
  GraphTensor rows = g.named_tensor("rows", {4, 300});
  (x.exp() * 2.0).sum(1).output();                   // a reduction with an inlined chain
  (x.scatter(idx, rows) + 1.0).output();             // a scatter: copy of dest, then rows
  x.softmax(1).output();                             // online softmax (max and sum in one kernel)
  const KernelPlan p = compiler::lower(g);
  std::vector<compiler::KernelSpec::Kind> kinds;
  for (const compiler::Step& s : p.steps) {
    const auto* k = std::get_if<compiler::KernelStep>(&s);
    if (!k) continue;
    EXPECT_EQ(k->source, "") << "lower() renders nothing";
    EXPECT_TRUE(k->args.empty() && k->reads.empty() && k->writes.empty());
    EXPECT_GE(k->spec.out, 0);
    EXPECT_EQ(compiler::describe(s).rfind("// kernel (", 0), 0u) << compiler::describe(s);
    kinds.push_back(k->spec.kind);
  }
  using K = compiler::KernelSpec::Kind;
  for (K want : {K::Reduce, K::CopyInput, K::ScatterRows, K::OnlineSoftmax, K::Compute})
    EXPECT_NE(std::find(kinds.begin(), kinds.end(), want), kinds.end()) << int(want);
  KernelPlan r = p;
  cuda::codegen::render(g, r);
  ASSERT_EQ(r.steps.size(), p.steps.size()) << "rendering adds or removes no step";
  EXPECT_EQ(r.buffers.size(), p.buffers.size());
  for (size_t i = 0; i < r.steps.size(); ++i) {
    const auto* k = std::get_if<compiler::KernelStep>(&r.steps[i]);
    if (!k) continue;
    EXPECT_NE(k->source.find("extern \"C\" __global__"), std::string::npos);
    EXPECT_NE(k->source.find(k->name), std::string::npos);
    EXPECT_FALSE(k->writes.empty());
    EXPECT_EQ(k->spec.out, std::get<compiler::KernelStep>(p.steps[i]).spec.out);
    EXPECT_NE(std::find(k->writes.begin(), k->writes.end(), k->spec.out), k->writes.end())
        << k->name << " writes the buffer its spec names";
  }
  // Rendering twice changes nothing (rendered steps are kept).
  KernelPlan again = r;
  cuda::codegen::render(g, again);
  for (size_t i = 0; i < r.steps.size(); ++i)
    if (const auto* k = std::get_if<compiler::KernelStep>(&r.steps[i]))
      EXPECT_EQ(std::get<compiler::KernelStep>(again.steps[i]).source, k->source);
}

TEST(Lower, ReluReadsInputOnce) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {16});
  x.relu().output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const auto ks = kernels(p);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(count(ks[0]->source, "b0["), 1u);
  EXPECT_EQ(ks[0]->source.find("Mul buffer"), std::string::npos);
}

TEST(Lower, ReductionWritesStraightIntoOutput) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4, 8});
  GraphTensor s = x.sum(1);
  s.output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  ASSERT_EQ(p.steps.size(), 1u);
  EXPECT_EQ(p.buffer_of_node[s.id], p.buffer_of_node[s.id - 1]);  // Output aliases the SumReduce
  EXPECT_EQ(p.buffers[p.buffer_of_node[s.id]].kind, compiler::PlanBuffer::Kind::Output);
  EXPECT_EQ(p.buffers.size(), 2u);
}

// The Output's expression reads a custom op's result created after the reduction: fusing it into
// the reduction kernel (which runs first) would read the custom op's buffer before it is written.
TEST(Lower, ReductionEpilogueWaitsForLaterBuffers) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4, 3, 2});
  GraphTensor table = g.named_tensor("table", {10, 2});
  GraphTensor idx = g.named_tensor("idx", {5}, DType::I64);
  GraphTensor off = g.named_tensor("off", {4}, DType::I64);
  GraphTensor sum = x.sum(1);
  GraphTensor out = (sum + custom::embedding_bag(table, idx, off, nn::BagMode::Sum)).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  size_t custom = p.steps.size(), writer = p.steps.size();
  for (size_t i = 0; i < p.steps.size(); ++i) {
    if (std::holds_alternative<CustomStep>(p.steps[i])) custom = i;
    if (const auto* k = std::get_if<KernelStep>(&p.steps[i]))
      for (int b : k->writes)
        if (b == p.buffer_of_node[out.id]) writer = i;
  }
  ASSERT_LT(custom, p.steps.size());
  ASSERT_LT(writer, p.steps.size());
  EXPECT_GT(writer, custom);
}

TEST(Lower, SecondConsumerPreventsOutputAlias) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4, 8});
  GraphTensor s = x.sum(1);
  GraphTensor a = s, b = s * 2.0;
  a.output();
  b.output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  EXPECT_EQ(kernels(p).size(), 3u);  // reduction + two Output kernels
  EXPECT_EQ(p.buffers.size(), 4u);
}

TEST(Lower, MlpGeneratedPathHasTwoReductions) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 13});
  nn::Linear l1(g, "l1", 13, 8), l2(g, "l2", 8, 4);
  GraphTensor y = l2(l1(x).relu()).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  EXPECT_TRUE(matmuls(p).empty());
  const auto ks = kernels(p);
  ASSERT_EQ(ks.size(), 2u);  // two reductions; the last bias add runs in the second one's epilogue
  EXPECT_NE(ks[0]->name.find("sum_reduce"), std::string::npos);
  EXPECT_NE(ks[1]->name.find("sum_reduce"), std::string::npos);
  EXPECT_EQ(ks[1]->writes, std::vector<int>{p.buffer_of_node[y.id]});
  // The second reduction reads the first one's buffer with bias + ReLU inlined: no extra buffers.
  EXPECT_EQ(p.buffers.size(), 5u + 1u + 1u);  // x, 4 weights/biases, output, the first reduction
}

TEST(Lower, ReductionEpilogueOnlyForElementwiseOutputs) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4, 8}), b = g.named_tensor("b", {4});
  GraphTensor s = x.sum(1);
  GraphTensor sig = (s + b).sigmoid().output();
  GraphTensor m = x.max(1);
  (m * 2.0).output();
  (m + 1.0).output();  // m has two Outputs: it keeps its buffer
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const auto ks = kernels(p);
  ASSERT_EQ(ks.size(), 4u);  // sum with the sigmoid epilogue; max; its two Output kernels
  EXPECT_NE(ks[0]->source.find("exp2f"), std::string::npos);
  EXPECT_EQ(ks[0]->writes, std::vector<int>{p.buffer_of_node[sig.id]});
  EXPECT_EQ(p.buffer_of_node[s.id], -1);
  EXPECT_GE(p.buffer_of_node[m.id], 0);
}

// DLRM's first bottom layer at one sample (270 x 13 -> 512: generated) feeding a library matmul:
// its ReLU, materialized for cuBLASLt, is computed by the reduction kernel (one kernel, no buffer
// for the sum), and the CPU backend, which lowers the same way, still matches the reference.
TEST(Lower, MaterializedElementwiseRootRunsInItsReductionKernel) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {270, 13});
  nn::Linear l1(g, "l1", 13, 512), l2(g, "l2", 512, 256);
  GraphTensor h = l1(x).relu();
  GraphTensor y = l2(h).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const auto ks = kernels(p);
  const auto mm = matmuls(p);
  ASSERT_EQ(ks.size(), 1u) << "the sum and its bias + ReLU in one kernel";
  ASSERT_EQ(mm.size(), 1u);
  EXPECT_NE(ks[0]->name.find("sum_reduce"), std::string::npos);
  EXPECT_EQ(ks[0]->writes, std::vector<int>{mm[0]->a});  // the ReLU output the matmul reads
  EXPECT_EQ(p.buffer_of_node[h.id], mm[0]->a);
  EXPECT_NE(ks[0]->source.find(fmt::format("then %{} Mul", h.id)), std::string::npos) << ks[0]->source;

  // On the CPU backend (oneDNN from 16 kFLOP) the same structure appears at 2 x 13 -> 8 -> 1024.
  Graph gc;
  GraphTensor xc = gc.named_tensor("x", {2, 13});
  nn::Linear c1(gc, "c1", 13, 8), c2(gc, "c2", 8, 1024);
  GraphTensor yc = c2(c1(xc).relu()).output();
  Executable cpu_rt(gc, cpu::backend());
  ReferenceRuntime ref(gc);
  auto fill = [](size_t n, int mod, float scale) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = float(int(i % size_t(mod)) - mod / 2) * scale;
    return v;
  };
  const std::vector<float> xs = fill(2 * 13, 17, 0.125f), w1 = fill(8 * 13, 11, 0.0625f),
                           b1 = fill(8, 7, 0.25f), w2 = fill(1024 * 8, 13, 0.01f), b2 = fill(1024, 5, 0.5f);
  for (Runtime* r : {static_cast<Runtime*>(&cpu_rt), static_cast<Runtime*>(&ref)}) {
    r->set_data(xc, std::span<const float>(xs));
    r->set_data(c1.weight, std::span<const float>(w1));
    r->set_data(*c1.bias, std::span<const float>(b1));
    r->set_data(c2.weight, std::span<const float>(w2));
    r->set_data(*c2.bias, std::span<const float>(b2));
    r->execute();
  }
  const std::vector<float> got = cpu_rt.get_f32(yc), want = ref.get_f32(yc);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << i;
}

TEST(Lower, MatmulStepOnlyWhenBigEnough) {
  for (int64_t m : {4, 256}) {
    Graph g;
    GraphTensor a = g.named_tensor("a", {m, 512}), b = g.named_tensor("b", {512, 512});
    a.matmul(b).output();
    const KernelPlan p = cuda::codegen::lower_and_render(g);
    const auto mm = matmuls(p);
    ASSERT_EQ(mm.size(), m == 256 ? 1u : 0u) << "m = " << m;
    if (mm.empty()) continue;
    EXPECT_TRUE(mm[0]->m.same(Expr(256)));
    EXPECT_TRUE(mm[0]->n.same(Expr(512)));
    EXPECT_TRUE(mm[0]->k.same(Expr(512)));
    EXPECT_TRUE(mm[0]->a_row.same(Expr(512)));
    EXPECT_TRUE(mm[0]->a_col.same(Expr(1)));
    EXPECT_TRUE(mm[0]->b_row.same(Expr(512)));
    EXPECT_TRUE(mm[0]->b_col.same(Expr(1)));
    EXPECT_EQ(mm[0]->a, p.buffer_of_node[a.id]);
    EXPECT_EQ(p.buffers[mm[0]->c].kind, compiler::PlanBuffer::Kind::Output);  // writes the result directly
    EXPECT_TRUE(kernels(p).empty());
  }
}

TEST(Lower, UnhintedDynamicBatchCountsAsLarge) {
  for (int64_t hint : {0, 1, 4096}) {
    Graph g;
    GraphTensor x = g.named_tensor("x", {Expr::sym("batch"), 64});
    nn::Linear fc(g, "fc", 64, 128);
    fc(x).relu().output();
    LowerOptions o;
    if (hint > 0) o.dim_hints["batch"] = hint;
    // 2 * batch * 64 * 128 flops: 16384 at batch 1 (below 2^22), 16.8M at the unhinted 1024.
    const KernelPlan p = cuda::codegen::lower_and_render(g, o);
    ASSERT_EQ(matmuls(p).size(), hint == 1 ? 0u : 1u) << "hint " << hint;
    if (hint == 1) continue;
    EXPECT_TRUE(matmuls(p)[0]->m.same(Expr::sym("batch")));
    EXPECT_TRUE(matmuls(p)[0]->relu);
  }
}

TEST(Lower, MatmulEpilogueTakesBiasAndRelu) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {1024, 256});
  nn::Linear l1(g, "l1", 256, 512), l2(g, "l2", 512, 256);
  l2(l1(x).relu()).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const auto mm = matmuls(p);
  ASSERT_EQ(mm.size(), 2u);
  EXPECT_EQ(mm[0]->bias, p.buffer_of_node[l1.bias->id]);
  EXPECT_TRUE(mm[0]->relu);
  EXPECT_EQ(mm[1]->bias, p.buffer_of_node[l2.bias->id]);
  EXPECT_FALSE(mm[1]->relu);
  EXPECT_TRUE(mm[0]->b_row.same(Expr(1)));  // W^T read in place: [k, n] with unit row stride
  EXPECT_TRUE(mm[0]->b_col.same(Expr(256)));
  EXPECT_EQ(mm[1]->a, mm[0]->c);  // layer 2 reads layer 1's ReLU output buffer
  EXPECT_TRUE(kernels(p).empty());
  EXPECT_EQ(p.buffers.size(), 5u + 1u + 1u);  // x, weights, output, one intermediate
}

TEST(Lower, InlinedMatmulOperandIsMaterialized) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {256, 512}), b = g.named_tensor("b", {2, 512, 512});
  GraphTensor a2 = a * 2.0;
  a2.matmul(b).output();  // batch 2, a broadcast over the batch (stride 0)
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const auto mm = matmuls(p);
  ASSERT_EQ(mm.size(), 1u);
  ASSERT_EQ(kernels(p).size(), 1u);  // a * 2 materialized for cuBLASLt
  EXPECT_EQ(mm[0]->a, p.buffer_of_node[a2.id]);
  EXPECT_TRUE(mm[0]->batch.same(Expr(2)));
  EXPECT_TRUE(mm[0]->a_batch.same(Expr(0)));
  EXPECT_TRUE(mm[0]->b_batch.same(Expr(512 * 512)));
}

TEST(Lower, DisabledCublasGivesGeneratedKernel) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {256, 512}), b = g.named_tensor("b", {512, 512});
  a.matmul(b).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g, no_blas());
  EXPECT_TRUE(matmuls(p).empty());
  ASSERT_EQ(kernels(p).size(), 1u);
  EXPECT_TRUE(kernels(p)[0]->threads.same(Expr(256 * 512 * 32)));  // a warp per output (K = 512)
}

TEST(Lower, ReduceModesByLength) {
  using cuda::codegen::ReduceMode;
  EXPECT_EQ(cuda::codegen::choose_reduce_mode(8), ReduceMode::Thread);
  EXPECT_EQ(cuda::codegen::choose_reduce_mode(63), ReduceMode::Thread);
  EXPECT_EQ(cuda::codegen::choose_reduce_mode(64), ReduceMode::Warp);
  EXPECT_EQ(cuda::codegen::choose_reduce_mode(Expr::sym("n")), ReduceMode::Warp);
  EXPECT_EQ(cuda::codegen::choose_reduce_mode(8192), ReduceMode::Block);
  Graph g;
  g.named_tensor("x", {3, 8192}).max(1).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const auto ks = kernels(p);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_TRUE(ks[0]->threads.same(Expr(3 * 256)));
  EXPECT_NE(ks[0]->source.find("lum_block_reduce"), std::string::npos);
}

TEST(Lower, SoftmaxIsOnlineThenOutput) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4, 10});
  GraphTensor y = x.softmax(1).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const auto ks = kernels(p);
  ASSERT_EQ(ks.size(), 2u);  // max and sum in one pass, then the output
  EXPECT_NE(ks[0]->name.find("online_softmax"), std::string::npos);
  EXPECT_EQ(ks[0]->writes.size(), 2u);  // the max and the sum buffers
  EXPECT_EQ(count(ks[0]->source, "b0["), 1u);  // x is read once per element
  EXPECT_NE(ks[1]->name.find("output"), std::string::npos);
  EXPECT_EQ(ks[1]->writes, std::vector<int>{p.buffer_of_node[y.id]});
}

TEST(Lower, MaxAndSumWithoutSoftmaxShapeStaySeparate) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4, 10});
  GraphTensor m = x.max(1);
  ((x - m.expand_dim(1, 10)) * 2.0).sum(1).output();  // no exp2: not a softmax denominator
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const auto ks = kernels(p);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_NE(ks[0]->name.find("max_reduce"), std::string::npos);
  EXPECT_NE(ks[1]->name.find("sum_reduce"), std::string::npos);
}

TEST(Lower, UnitReductionsAreInlined) {
  Graph g;
  nn::EmbeddingBag bag(g, "emb", 10, 4);
  GraphTensor idx = g.named_tensor("idx", {6}, DType::I32);
  GraphTensor one = bag(idx, 1), three = bag(idx.slice(0, 0, 6), 3);
  (one * 2.0).output();
  three.output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const auto ks = kernels(p);
  ASSERT_EQ(ks.size(), 2u);  // bag 3: a reduction (emitted first, in node order); bag 1: read
  EXPECT_NE(ks[0]->name.find("sum_reduce"), std::string::npos);  // inline by the Output kernel
  EXPECT_NE(ks[1]->name.find("output"), std::string::npos);
  EXPECT_EQ(ks[1]->source.find("for ("), std::string::npos);
  EXPECT_EQ(p.buffer_of_node[one.id], -1);
}

TEST(Lower, DeadNodesAreNotComputed) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4, 8});
  GraphTensor unused = x.sum(0);
  (x + 1.0).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  EXPECT_EQ(kernels(p).size(), 1u);
  EXPECT_EQ(p.buffer_of_node[unused.id], -1);
}

TEST(Lower, DynamicDimsBecomeArgs) {
  Graph g;
  const Expr batch = Expr::sym("batch");
  GraphTensor x = g.named_tensor("x", {batch, 4});
  (x * x).sum(1).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  EXPECT_EQ(p.symbols, std::vector<std::string>{"batch"});
  const auto ks = kernels(p);
  ASSERT_EQ(ks.size(), 1u);
  bool has_dim = false;
  for (const KernelArg& a : ks[0]->args) has_dim |= a.kind == KernelArg::Kind::Dim && a.sym == "batch";
  EXPECT_TRUE(has_dim);
  EXPECT_TRUE(ks[0]->threads.same(batch));
  EXPECT_NE(ks[0]->source.find("long long d_batch"), std::string::npos);
  EXPECT_TRUE(p.buffers[p.buffer_of_node[x.id]].numel.same(batch * 4));
}

TEST(Lower, GatherFlagsErrors) {
  Graph g;
  GraphTensor t = g.named_tensor("t", {10, 4}), i = g.named_tensor("i", {3}, DType::I64);
  t.gather(i).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const auto ks = kernels(p);
  ASSERT_EQ(ks.size(), 1u);
  EXPECT_EQ(ks[0]->args.back().kind, KernelArg::Kind::ErrorFlag);
  EXPECT_NE(ks[0]->source.find("lum_clamp_row"), std::string::npos);
  EXPECT_NE(ks[0]->source.find("LUM_ERR_GATHER"), std::string::npos);
}

TEST(Lower, ScatterIsCopyThenRows) {
  Graph g;
  GraphTensor d = g.named_tensor("d", {10, 4}), i = g.named_tensor("i", {2}, DType::I32);
  GraphTensor s = g.named_tensor("s", {2, 4});
  d.scatter(i, s).output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const auto ks = kernels(p);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0]->writes, ks[1]->writes);
  EXPECT_TRUE(ks[1]->threads.same(Expr(8)));
  EXPECT_NE(ks[1]->source.find("LUM_ERR_SCATTER"), std::string::npos);
}

class Plus1 final : public CustomOp {
 public:
  std::string name() const override { return "Plus1"; }
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& in) const override { return in.at(0) + 1.0; }
};

TEST(Lower, CustomGetsContiguousInputs) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {3, 5});
  GraphTensor direct = custom_op(std::make_shared<Plus1>(), {x});
  GraphTensor transposed = custom_op(std::make_shared<Plus1>(), {x.transpose(0, 1)});
  GraphTensor computed = custom_op(std::make_shared<Plus1>(), {x * 3.0});
  direct.output();
  transposed.output();
  computed.output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  std::vector<const CustomStep*> cs;
  for (const auto& s : p.steps) {
    if (const auto* c = std::get_if<CustomStep>(&s)) cs.push_back(c);
  }
  ASSERT_EQ(cs.size(), 3u);
  EXPECT_EQ(cs[0]->inputs, std::vector<int>{p.buffer_of_node[x.id]});
  EXPECT_NE(cs[1]->inputs[0], p.buffer_of_node[x.id]);  // a copy kernel made it contiguous
  EXPECT_GE(p.buffer_of_node[computed.node().inputs[0].node], 0);  // x * 3 materialized for it
  EXPECT_EQ(kernels(p).size(), 2u);  // the transpose copy and the x * 3 kernel
  for (const CustomStep* c : cs) EXPECT_EQ(p.buffers[c->output].kind, compiler::PlanBuffer::Kind::Output);
}

TEST(Lower, BadIndexDTypeThrows) {
  Graph g;
  GraphTensor t = g.named_tensor("t", {10, 4}), i = g.named_tensor("i", {3});
  Node n;
  n.kind = OpKind::Gather;
  n.dtype = DType::F32;
  n.inputs = {{t.id, t.view}, {i.id, i.view}};
  n.shape = {3, 4};
  GraphTensor(&g, g.add_node(std::move(n))).output();
  try {
    cuda::codegen::lower_and_render(g);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("index dtype must be i32 or i64"), std::string::npos) << e.what();
  }
}

TEST(Lower, BadSymbolNameThrows) {
  Graph g;
  g.named_tensor("x", {Expr::sym("my dim")}).sum(0).output();
  try {
    cuda::codegen::lower_and_render(g);
    FAIL() << "expected an exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("'my dim' is not a C identifier"), std::string::npos) << e.what();
  }
}

TEST(Lower, DebugEnvPrintsSources) {
  Graph g;
  (g.named_tensor("x", {4}) * 2.0).output();
  setenv("LUMINAL_DEBUG", "2", 1);
  testing::internal::CaptureStderr();
  cuda::codegen::lower_and_render(g);
  const std::string err = testing::internal::GetCapturedStderr();
  unsetenv("LUMINAL_DEBUG");
  EXPECT_NE(err.find("extern \"C\" __global__"), std::string::npos);
}

TEST(Lower, AlignedViewsNeedNoDivMod) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4, 6});
  GraphTensor y = (x * 2.0).transpose(0, 1).slice(0, 1, 5);  // inlined producer read through a view
  y.output();
  const KernelPlan p = cuda::codegen::lower_and_render(g);
  const auto ks = kernels(p);
  ASSERT_EQ(ks.size(), 1u);
  // Only the output's own unflatten divides: i / 4 and i % 4.
  EXPECT_EQ(count(ks[0]->source, " / "), 1u) << ks[0]->source;
  EXPECT_EQ(count(ks[0]->source, " % "), 1u) << ks[0]->source;
}

TEST(DTypeCode, LiteralsRoundLikeStores) {
  using cuda::codegen::literal;
  EXPECT_EQ(literal(DType::F32, 0.5), "0.5f");
  EXPECT_EQ(literal(DType::F32, 2.0), "2.0f");
  EXPECT_EQ(literal(DType::F32, -3.0), "(-3.0f)");
  EXPECT_EQ(literal(DType::F16, 0.1), "0.0999755859f");  // nearest half of 0.1 is 0.0999755859375
  EXPECT_EQ(literal(DType::BF16, 1.00390625), "1.0f");    // 1 + 2^-8 ties to even in bf16
  EXPECT_EQ(literal(DType::I32, -2.7), "(-2)");
  EXPECT_EQ(literal(DType::U8, 300.0), "((unsigned char)44)");
  EXPECT_EQ(literal(DType::Bool, 0.25), "true");
  EXPECT_EQ(literal(DType::I64, 5e9), "5000000000LL");
}

}  // namespace
}  // namespace luminal
