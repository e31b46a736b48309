// The GEMV kernel (src/cuda/kernels/gemv.cuh) compiles with NVRTC for sm_90 for every dtype it
// serves, and refuses the others by name.
#include <gtest/gtest.h>

#include "cuda/codegen/kernels.h"
#include "cuda/runtime/gemv.h"
#include "expect_error.h"
#include "nvrtc/nvrtc_compile.h"

namespace luminal {
namespace {

TEST(GemvCompile, EveryServedDtypeCompiles) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    for (int loads : {2, 4, 8, 16})
      EXPECT_TRUE(test::nvrtc_compiles(cuda::gemv_source(dt, loads), cuda::gemv_entry(dt)))
          << dtype_name(dt) << " loads " << loads;
}

// Llama-1B's decode projections (bf16: 8 elements per 16-byte vector): a column's k range is
// split until about 8192 warps run, keeping at least 32 vectors (one per lane) per slice.
TEST(GemvSplits, SmallProjectionsSplitTheirRowsLargeOnesDoNot) {
  EXPECT_EQ(cuda::gemv_splits(2048, 2048, 8, 132), 4);    // q / o
  EXPECT_EQ(cuda::gemv_splits(512, 2048, 8, 132), 8);     // k / v
  EXPECT_EQ(cuda::gemv_splits(8192, 2048, 8, 132), 1);    // gate / up
  EXPECT_EQ(cuda::gemv_splits(2048, 8192, 8, 132), 4);    // down
  EXPECT_EQ(cuda::gemv_splits(128256, 2048, 8, 132), 1);  // LM head
  EXPECT_EQ(cuda::gemv_splits(64, 40, 8, 132), 1);        // 5 vectors: one slice
  EXPECT_EQ(cuda::gemv_splits(64, 512, 4, 132), 4);       // f32: 128 vectors, 4 slices of 32
}

// Which GEMV steps the runtime may run at an earlier step's place (and so keeps their outputs off
// the memory of the steps in between): q, k, v of one input with an op on q between them pair k
// and v with q; gate and up of another input pair with each other; a product of a third input,
// or of the same input at another k, pairs with nothing.
TEST(GemvGroupHeads, ProductsOfOneInputPairWithTheFirst) {
  Graph g;
  const Expr s = Expr::sym("s");
  GraphTensor x = g.named_tensor("x", {s, 64}, DType::BF16);
  int weights = 0;
  auto linear = [&](const GraphTensor& in, int64_t n) {
    const int64_t k = *in.dims()[1].as_const();
    const std::string name = "w" + std::to_string(weights++);
    return in.matmul(g.named_tensor(name, {n, k}, DType::BF16).persist().transpose(0, 1));
  };
  GraphTensor q = linear(x, 64) * 0.5;
  GraphTensor k = linear(x, 16), v = linear(x, 16);
  GraphTensor h = (q + x).sin();
  GraphTensor gate = linear(h, 128), up = linear(h, 128);
  GraphTensor down = linear(gate * up, 64);
  for (GraphTensor* t : {&q, &k, &v, &gate, &up, &down}) t->output();
  compiler::LowerOptions opts;
  opts.dim_hints = {{"s", 4096}};
  const compiler::KernelPlan p = cuda::codegen::lower_and_render(g, opts);
  std::vector<int> gemv_steps;
  for (size_t i = 0; i < p.steps.size(); ++i)
    if (const auto* m = std::get_if<compiler::MatmulStep>(&p.steps[i]); m && m->gemv_max_m > 0)
      gemv_steps.push_back(int(i));
  ASSERT_EQ(gemv_steps.size(), 6u) << "q, k, v, gate, up, down as GEMV-capable matmul steps";
  const auto heads = cuda::gemv_group_heads(p);
  ASSERT_EQ(heads.size(), 3u);
  auto a_of = [&](int step) { return std::get<compiler::MatmulStep>(p.steps[size_t(step)]).a; };
  for (const auto& [later, head] : heads) {
    EXPECT_LT(head, later);
    EXPECT_EQ(a_of(later), a_of(head));
    EXPECT_NE(later, gemv_steps.back()) << "down reads its own input";
  }
}

// The residual Adds a GEMV may do itself: x1 = x + a @ Wo^T and x2 = x1 + x1 @ Wd^T, both
// materialized (each is a later product's input, as Llama's residual stream is its norms'), each
// pair the product's step with its Add's; a product with a second reader, an Add inlined into
// its reader, or one of a broadcast row (a bias epilogue) pairs with nothing.
TEST(GemvResiduals, AddsOfAWholeBufferToTheirOnlyReaderPair) {
  Graph g;
  const Expr s = Expr::sym("s");
  GraphTensor x = g.named_tensor("x", {s, 64}, DType::BF16);
  GraphTensor a = g.named_tensor("a", {s, 128}, DType::BF16);
  auto w = [&](const char* name, int64_t n, int64_t k) {
    return g.named_tensor(name, {n, k}, DType::BF16).persist().transpose(0, 1);
  };
  GraphTensor x1 = x + a.matmul(w("wo", 64, 128));
  GraphTensor x2 = x1 + x1.matmul(w("wd", 64, 64));
  GraphTensor x3 = x2.matmul(w("w3", 32, 64));
  GraphTensor y = a.matmul(w("wy", 64, 128));  // two readers: the sum and the product
  GraphTensor y1 = (y + x).matmul(w("w4", 32, 64)), y2 = y * 2.0;
  GraphTensor u = (a.matmul(w("wu", 64, 128)) + x).sin();  // the Add inlined into sin's kernel
  GraphTensor z =
      a.matmul(w("wz", 64, 128)) + g.named_tensor("row", {64}, DType::BF16).expand_dim(0, s);
  for (GraphTensor* t : {&x1, &x2, &x3, &y1, &y2, &u, &z}) t->output();
  compiler::LowerOptions opts;
  opts.dim_hints = {{"s", 4096}};
  const compiler::KernelPlan p = cuda::codegen::lower_and_render(g, opts);
  const std::vector<cuda::GemvResidual> found = cuda::gemv_residuals(g, p);
  ASSERT_EQ(found.size(), 2u);
  for (const cuda::GemvResidual& f : found) {
    EXPECT_LT(f.matmul_step, f.add_step);
    const auto& k = std::get<compiler::KernelStep>(p.steps[size_t(f.add_step)]);
    EXPECT_EQ(k.writes, std::vector<int>{f.out});
    ASSERT_EQ(k.nodes.size(), 1u);
    EXPECT_TRUE(k.nodes[0] == x1.node().inputs[0].node || k.nodes[0] == x2.node().inputs[0].node)
        << "the Adds of x1 and x2";
  }
}

TEST(GemvCompile, OtherDtypesAreRefused) {
  test::expect_error([] { cuda::gemv_source(DType::F64); }, {"no GEMV kernel", "f64"});
  test::expect_error([] { cuda::gemv_entry(DType::I32); }, {"no GEMV kernel"});
}

}  // namespace
}  // namespace luminal
