// Compiles every generated kernel family with NVRTC for sm_90 (no GPU needed): every primitive at
// every dtype family, reductions of every length class, norms, matmuls, MLPs, DLRM, dynamic dims,
// views with padding and slicing, gather / scatter and Custom input copies.
#include <cmath>
#include <memory>
#include <variant>

#include <gtest/gtest.h>

#include "cuda/codegen/kernels.h"
#include "compiler/kernel_plan.h"
#include "luminal/custom_op.h"
#include "luminal/models/dlrm.h"
#include "luminal/nn.h"
#include "luminal/tensor.h"
#include "nvrtc/nvrtc_compile.h"

namespace luminal {
namespace {

using compiler::KernelPlan;
using compiler::KernelStep;
using compiler::LowerOptions;

constexpr DType kAll[] = {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32,
                          DType::I64, DType::I8,  DType::U8,   DType::Bool};

// Lowers g and compiles every KernelStep; returns the plan for further checks.
KernelPlan compile_all(const Graph& g, const LowerOptions& opts = {}) {
  KernelPlan plan = cuda::codegen::lower_and_render(g, opts);
  for (const compiler::Step& s : plan.steps) {
    if (const auto* k = std::get_if<KernelStep>(&s)) {
      EXPECT_TRUE(test::nvrtc_compiles(k->source, k->name));
    }
  }
  return plan;
}

size_t kernel_steps(const KernelPlan& p) {
  size_t n = 0;
  for (const auto& s : p.steps) n += std::holds_alternative<KernelStep>(s);
  return n;
}

// A raw primitive node over the inputs' current views.
GraphTensor prim(Graph& g, OpKind k, DType dt, const std::vector<GraphTensor>& ins, std::vector<Expr> shape) {
  Node n;
  n.kind = k;
  n.dtype = dt;
  for (const GraphTensor& t : ins) n.inputs.push_back({t.id, t.view});
  n.shape = std::move(shape);
  return GraphTensor(&g, g.add_node(std::move(n)));
}

std::string name_of(DType dt) { return std::string(dtype_name(dt)); }

class PerDType : public ::testing::TestWithParam<DType> {};

TEST_P(PerDType, EveryElementwisePrimitive) {
  const DType dt = GetParam();
  Graph g;
  GraphTensor x = g.named_tensor("x", {4, 5}, dt), y = g.named_tensor("y", {4, 5}, dt);
  for (OpKind k : {OpKind::Exp2, OpKind::Log2, OpKind::Sin, OpKind::Sqrt, OpKind::Recip}) {
    prim(g, k, dt, {x}, x.dims()).output();
  }
  for (OpKind k : {OpKind::Add, OpKind::Mul, OpKind::Mod}) prim(g, k, dt, {x, y}, x.dims()).output();
  prim(g, OpKind::LessThan, DType::Bool, {x, y}, x.dims()).output();
  (x.lt(y).cast(dt) * x).output();  // bool compare result feeding arithmetic
  for (double v : {0.0, 0.5, -3.0, 1e30, 300.0}) (x + g.constant(v, dt).expand_to(x.dims())).output();
  EXPECT_EQ(kernel_steps(compile_all(g)), 15u);
}

TEST_P(PerDType, CastToEveryDType) {
  const DType from = GetParam();
  Graph g;
  GraphTensor x = g.named_tensor("x", {3, 7}, from);
  for (DType to : kAll) x.cast(to).output();
  EXPECT_EQ(kernel_steps(compile_all(g)), 9u);
}

TEST_P(PerDType, SumAndMaxOfEveryLengthClass) {
  const DType dt = GetParam();
  Graph g;
  const Expr s = Expr::sym("len");
  for (Expr len : {Expr(8), Expr(128), Expr(8192), s}) {
    GraphTensor x = g.named_tensor(fmt::format("x{}", len.to_string()), {3, len, 2}, dt);
    x.sum(1).output();
    x.max(1).output();
    (x.sum(1) * 2.0).output();  // an epilogue in the reduction kernel
  }
  const KernelPlan p = compile_all(g);
  EXPECT_EQ(kernel_steps(p), 12u);
}

TEST_P(PerDType, IotaAndConstantOutputs) {
  const DType dt = GetParam();
  Graph g;
  g.arange(10, dt).output();
  g.constant(2.5, dt).output();
  compile_all(g);
}

TEST_P(PerDType, WhereAndComparisons) {
  // where() is a Gather over the concat of both branches; comparisons test for NaN on floats.
  const DType dt = GetParam();
  Graph g;
  const Expr s = Expr::sym("s");
  GraphTensor c = g.named_tensor("c", {s, 5}, DType::Bool);
  GraphTensor x = g.named_tensor("x", {s, 5}, dt), y = g.named_tensor("y", {5}, dt);
  where(c, x, y).output();
  where(c, g.constant(0.0, dt), x).output();
  x.eq(y).output();
  x.le(y).output();
  x.ne(y).output();
  x.minimum(y).output();
  EXPECT_EQ(kernel_steps(compile_all(g)), 6u);
}

INSTANTIATE_TEST_SUITE_P(AllDTypes, PerDType, ::testing::ValuesIn(kAll),
                         [](const auto& info) { return name_of(info.param); });

TEST(CodegenCompile, SpecialFloatConstants) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4});
  for (DType dt : {DType::F32, DType::F64, DType::F16}) {
    GraphTensor xd = x.cast(dt);
    for (double v : {double(INFINITY), double(-INFINITY), double(NAN), -0.0}) (xd + g.constant(v, dt).expand_to(xd.dims())).output();
  }
  compile_all(g);
}

class Norms : public ::testing::TestWithParam<DType> {};

TEST_P(Norms, SoftmaxLayerNormRmsNorm) {
  const DType dt = GetParam();
  Graph g;
  GraphTensor x = g.named_tensor("x", {Expr::sym("batch"), 96}, dt);
  GraphTensor w = g.named_tensor("w", {Expr::sym("batch"), 7}, dt);
  x.softmax(1).output();
  x.layer_norm(1).output();
  x.rms_norm(1).output();
  w.softmax(0).output();
  x.mean(0).output();
  g.named_tensor("short", {5, 8}, dt).softmax(1).output();   // online softmax, a thread per row
  g.named_tensor("long", {2, 8192}, dt).softmax(1).output();  // online softmax, a block per row
  const KernelPlan p = compile_all(g);
  size_t online = 0;
  for (const auto& s : p.steps) {
    const auto* k = std::get_if<KernelStep>(&s);
    online += k && k->name.find("online_softmax") != std::string::npos;
  }
  EXPECT_EQ(online, 4u);
}

INSTANTIATE_TEST_SUITE_P(FloatDTypes, Norms, ::testing::Values(DType::F32, DType::F16, DType::BF16, DType::F64),
                         [](const auto& info) { return name_of(info.param); });

TEST(CodegenCompile, GeneratedMatmuls) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {8, 16}), b = g.named_tensor("b", {16, 12});
  GraphTensor ba = g.named_tensor("ba", {3, 8, 16}), bb = g.named_tensor("bb", {3, 16, 12});
  GraphTensor v = g.named_tensor("v", {16});
  a.matmul(b).output();
  ba.matmul(bb).output();
  ba.matmul(b).output();
  a.matmul(b.transpose(0, 1).transpose(0, 1)).output();
  b.transpose(0, 1).matmul(a.transpose(0, 1)).output();
  v.matmul(b).output();
  a.matmul(v).output();
  GraphTensor h = g.named_tensor("h", {4, 16}, DType::F16);
  h.matmul(g.named_tensor("hw", {16, 100}, DType::F16)).output();
  const KernelPlan p = compile_all(g);
  for (const auto& s : p.steps) EXPECT_TRUE(std::holds_alternative<KernelStep>(s));
}

TEST(CodegenCompile, MlpGeneratedAndCublas) {
  for (bool big : {false, true}) {
    Graph g;
    const Expr batch = Expr::sym("batch");
    GraphTensor x = g.named_tensor("x", {batch, 64});
    nn::Linear l1(g, "l1", 64, 512), l2(g, "l2", 512, 256), l3(g, "l3", 256, 1);
    l3(l2(l1(x).relu()).relu()).sigmoid().output();
    LowerOptions opts;
    opts.dim_hints["batch"] = big ? 4096 : 1;
    const KernelPlan p = compile_all(g, opts);
    size_t mm = 0;
    for (const auto& s : p.steps) mm += std::holds_alternative<compiler::MatmulStep>(s);
    EXPECT_EQ(mm, big ? 2u : 0u);
  }
}

TEST(CodegenCompile, ViewsPaddingSlicingDynamic) {
  Graph g;
  const Expr s = Expr::sym("s");
  GraphTensor x = g.named_tensor("x", {s, 6, 4}), y = g.named_tensor("y", {6, 3});
  x.permute({2, 0, 1}).output();
  x.slice(1, 1, 5).pad(2, 2, 1).output();
  x.slice(0, 1, s).output();
  x.merge_dims(1).split_dims(1, 8).output();
  (x.slice(2, 0, 3) * y.expand_dim(0, s)).sum(0).output();
  concat({y, y * 2.0, y.slice(1, 0, 1)}, 1).output();
  x.pad(0, 1, 1).sum(0).output();
  (x.transpose(1, 2).contiguous() + 1.0).output();
  x.maximum(x * -1.0).output();
  x.pad(0, s, 0).slice(0, 1, s).output();
  compile_all(g);
}

TEST(CodegenCompile, GatherScatterEmbeddingBag) {
  for (DType it : {DType::I32, DType::I64}) {
    Graph g;
    GraphTensor table = g.named_tensor("table", {40, 16}), idx = g.named_tensor("idx", {Expr::sym("n")}, it);
    table.gather(idx).output();
    (table * 2.0).gather(idx.slice(0, 1, 3)).sum(1).output();
    nn::EmbeddingBag sum_bag(g, "emb_s", 100, 8, nn::BagMode::Sum), mean_bag(g, "emb_m", 100, 8, nn::BagMode::Mean);
    GraphTensor bidx = g.named_tensor("bidx", {12}, it);
    sum_bag(bidx, 3).output();
    mean_bag(bidx, 4).output();
    GraphTensor rows = g.named_tensor("rows", {2, 16}), ridx = g.named_tensor("ridx", {2}, it);
    table.scatter(ridx, rows).output();
    g.named_tensor("d1", {10}).scatter(ridx, g.named_tensor("s1", {2})).output();
    compile_all(g);
  }
}

TEST(CodegenCompile, DlrmGraph) {
  Graph g;
  models::DlrmConfig c{{13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 2048, 1, DType::I32};
  models::build_dlrm(g, c);
  compile_all(g);
  LowerOptions no_blas;
  no_blas.use_cublaslt = false;
  compile_all(g, no_blas);
}

// Concats emitted as a select of one part (src/cuda/codegen/concat_select.cpp): many parts, both
// axes, inlined and reduced parts, gaps, nested concats, dynamic boundaries, every dtype.
TEST(CodegenCompile, ConcatSelect) {
  Graph g;
  std::vector<GraphTensor> ins, exprs, feats{g.named_tensor("dense", {64, 16})};
  for (int k = 0; k < 64; ++k) {
    ins.push_back(g.named_tensor("x" + std::to_string(k), {4, 1 + k % 3, 8}));
    exprs.push_back((ins.back() * (k + 1.0)).exp2());
  }
  concat(std::vector<GraphTensor>(ins.begin(), ins.begin() + 27), 1).output();
  concat(exprs, 1).output();
  for (int t = 0; t < 26; ++t) {
    nn::EmbeddingBag eb(g, "emb" + std::to_string(t), 100, 16, nn::BagMode::Sum);
    const int bag = 1 + t % 2;
    feats.push_back(eb(g.named_tensor("idx" + std::to_string(t), {64 * bag}, DType::I64), bag));
  }
  GraphTensor c = concat(feats, 1);
  c.output();
  c.split_dims(1, 16).sum(2).output();
  const Expr s = Expr::sym("s");
  GraphTensor a = g.named_tensor("a", {s, 4}), b = g.named_tensor("b", {2, 4});
  concat({a, b, a * 3.0}, 0).output();
  concat({a, b.slice(0, 0, 1).expand_to({s, 4}), a}, 1).output();
  (a.pad(1, 0, 2) + b.slice(0, 0, 1).slice(1, 0, 1).expand_to({s, 1}).pad(1, 5, 0)).output();
  concat({a.concat_along(a, 1), a.concat_along(a * 2.0, 1)}, 1).output();
  compile_all(g);
  for (DType dt : kAll) {
    Graph h;
    GraphTensor x = h.named_tensor("x", {3, 5}, dt), y = h.named_tensor("y", {3, 2}, dt);
    concat({x, y, x.slice(1, 1, 3), y}, 1).output();
    concat({x, x}, 0).output();
    compile_all(h);
  }
}

class Twice final : public CustomOp {
 public:
  std::string name() const override { return "Twice"; }
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& in) const override { return in.at(0) * 2.0; }
};

TEST(CodegenCompile, CustomInputCopies) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {5, 3}, DType::BF16);
  custom_op(std::make_shared<Twice>(), {x.transpose(0, 1)}).output();
  custom_op(std::make_shared<Twice>(), {(x + x).pad(0, 1, 0)}).output();
  const KernelPlan p = compile_all(g);
  EXPECT_EQ(kernel_steps(p), 2u);
}

}  // namespace
}  // namespace luminal
