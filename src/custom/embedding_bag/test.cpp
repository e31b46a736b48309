// EmbeddingBag on the CPU reference runtime: the decomposition against a hand-checked case and the
// plain-loop oracle (sum/mean, jagged and empty bags, f32/bf16/f16 tables, i32/i64 indices, nnz
// and B changing between executes), one Custom node per bag, clear errors for bad inputs, and the
// kernel generator's host side (layout, a source that does not depend on nnz or B).
#include <gtest/gtest.h>

#include "custom/embedding_bag/test_util.h"
#include "expect_error.h"
#include "luminal/reference.h"
#include "test_caps.h"

namespace luminal {
namespace {

using bag_test::Case;
using ::luminal::test::expect_error;
using Floats = std::vector<float>;

Floats run_cpu(const Case& c, bool dynamic) {
  Graph g;
  const bag_test::Bound b = bag_test::build_for(g, c, dynamic);
  ReferenceRuntime rt(g);
  bag_test::set_inputs(rt, b, c);
  rt.execute(dynamic ? bag_test::dyn_of(c) : DynMap{});
  return rt.get_f32(b.out);
}

TEST(EmbeddingBag, HandChecked) {
  // Rows (1,2), (3,4), (5,6); offsets [0, 0, 3], indices [0, 2, 2, 1]: bag 0 empty, bag 1 rows
  // 0 + 2 + 2 = (11, 14), bag 2 (the last, ending at nnz) row 1 = (3, 4).
  Case c;
  c.rows = 3, c.dim = 2, c.table = {1, 2, 3, 4, 5, 6}, c.indices = {0, 2, 2, 1};
  c.offsets = {0, 0, 3};
  EXPECT_EQ(run_cpu(c, false), (Floats{0, 0, 11, 14, 3, 4}));
  c.mode = nn::BagMode::Mean;
  c.index_dtype = DType::I64;
  const Floats m = run_cpu(c, true);
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0], 0.f);  // an empty bag's mean is 0, not NaN
  EXPECT_FLOAT_EQ(m[2], 11.f / 3.f);
  EXPECT_FLOAT_EQ(m[3], 14.f / 3.f);
  EXPECT_EQ(m[4], 3.f);
}

// Every mode x table dtype x index dtype, static and dynamic nnz / B, against the loop oracle.
TEST(EmbeddingBag, AllVariantsMatchLoops) {
  uint32_t seed = 1;
  for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
    for (DType dt : {DType::F32, DType::BF16, DType::F16})
      for (DType it : {DType::I32, DType::I64})
        for (int64_t d : {1, 5, 8}) {
          const Case c = bag_test::random_case(13, d, 7, mode, dt, it, seed++);
          const std::vector<double> want = bag_test::loops(c);
          const double rtol = bag_test::rtol_of(dt), atol = dt == DType::F32 ? 1e-5 : 1e-2;
          EXPECT_EQ(bag_test::mismatch(run_cpu(c, false), want, atol, rtol), "")
              << c.describe() << " static";
          EXPECT_EQ(bag_test::mismatch(run_cpu(c, true), want, atol, rtol), "")
              << c.describe() << " dynamic";
        }
}

// Closed offsets [B + 1] (PyTorch's include_last_offset; one key's bags inside a
// KeyedJaggedTensor's values): the last offset ends the last bag, indices outside the bounds are
// never read.
// per_sample_weights (a weighted KeyedJaggedTensor): by hand, then every dtype, open and closed
// offsets, against the loops; mean mode and a wrong length are refused.
TEST(EmbeddingBag, PerSampleWeightsScaleEachRow) {
  Case c;
  c.rows = 3, c.dim = 2, c.table = {1, 2, 3, 4, 5, 6}, c.indices = {0, 2, 2, 1};
  c.offsets = {0, 0, 3};
  c.weights = {0.5f, 2.f, -1.f, 3.f};  // bag 1: 0.5 (1,2) + 2 (5,6) - (5,6) = (5.5, 7); bag 2: 3 (3,4)
  EXPECT_EQ(run_cpu(c, false), (Floats{0, 0, 5.5f, 7, 9, 12}));
  uint32_t seed = 900;
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (bool closed : {false, true}) {
      Case w = bag_test::weighted(bag_test::random_case(13, 5, 7, nn::BagMode::Sum, dt, DType::I64, seed), seed + 1);
      if (closed) w = bag_test::weighted(bag_test::closed_case(w, 3, 2, seed + 2), seed + 3);
      seed += 4;
      const double rtol = bag_test::rtol_of(dt), atol = dt == DType::F32 ? 1e-5 : 3e-2;
      EXPECT_EQ(bag_test::mismatch(run_cpu(w, true), bag_test::loops(w), atol, rtol), "") << w.describe();
    }
  Graph g;
  const GraphTensor t = g.named_tensor("t", {3, 2}), i = g.named_tensor("i", {4}, DType::I32),
                    o = g.named_tensor("o", {2}, DType::I32);
  expect_error([&] { custom::embedding_bag(t, i, o, nn::BagMode::Mean, false, g.named_tensor("w", {4})); },
               {"[embedding_bag] per_sample_weights need sum mode"});
  expect_error([&] { custom::embedding_bag(t, i, o, nn::BagMode::Sum, false, g.named_tensor("w5", {5})); },
               {"[embedding_bag] per_sample_weights is f32 [5], expected a 1-D [4] f32 tensor"});
  expect_error([&] { custom::embedding_bag(t, i, o, nn::BagMode::Sum, false, g.named_tensor("wb", {4}, DType::BF16)); },
               {"per_sample_weights is bf16"});
}

TEST(EmbeddingBag, ClosedOffsetsBoundTheLastBag) {
  // Rows (1,2), (3,4), (5,6); indices [1, 0, 2, 2, 1, 0], offsets [1, 1, 4]: bag 0 empty, bag 1
  // = rows 0 + 2 + 2 = (11, 14); indices 0 and 4, 5 belong to no bag.
  Case c;
  c.rows = 3, c.dim = 2, c.table = {1, 2, 3, 4, 5, 6}, c.indices = {1, 0, 2, 2, 1, 0};
  c.offsets = {1, 1, 4}, c.closed = true;
  EXPECT_EQ(run_cpu(c, false), (Floats{0, 0, 11, 14}));
  EXPECT_EQ(run_cpu(c, true), (Floats{0, 0, 11, 14}));
  uint32_t seed = 300;
  for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
    for (DType dt : {DType::F32, DType::BF16})
      for (DType it : {DType::I32, DType::I64}) {
        const Case cc = bag_test::closed_case(bag_test::random_case(13, 5, 6, mode, dt, it, seed), 4, 7, seed);
        ++seed;
        const std::vector<double> want = bag_test::loops(cc);
        const double rtol = bag_test::rtol_of(dt), atol = dt == DType::F32 ? 1e-5 : 1e-2;
        EXPECT_EQ(bag_test::mismatch(run_cpu(cc, false), want, atol, rtol), "") << cc.describe() << " static";
        EXPECT_EQ(bag_test::mismatch(run_cpu(cc, true), want, atol, rtol), "") << cc.describe() << " dynamic";
      }
}

TEST(EmbeddingBag, NnzAndBatchChangeBetweenExecutes) {
  const Case first = bag_test::random_case(20, 4, 5, nn::BagMode::Mean, DType::F32, DType::I32, 7);
  Graph g;
  const bag_test::Bound b = bag_test::build_for(g, first, true);
  ReferenceRuntime rt(g);
  for (uint32_t seed : {7u, 8u, 9u, 7u}) {
    const int64_t batch = seed == 8 ? 1 : 3 + int64_t(seed);  // a single bag: it ends at nnz
    const Case c =
        bag_test::random_case(20, 4, batch, nn::BagMode::Mean, DType::F32, DType::I32, seed, 6);
    bag_test::set_inputs(rt, b, c);
    rt.execute(bag_test::dyn_of(c));
    EXPECT_EQ(bag_test::mismatch(rt.get_f32(b.out), bag_test::loops(c), 1e-5, 1e-5), "")
        << c.describe();
  }
}

// A rewrite rule looks for one Custom node per bag; its output is [B, d] in the table's dtype.
TEST(EmbeddingBag, OneCustomNodeInTheTablesDtype) {
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    Graph g;
    const GraphTensor t = g.named_tensor("t", {10, 6}, dt);
    const GraphTensor out =
        custom::embedding_bag(t, g.named_tensor("i", {Expr::sym("nnz")}, DType::I64),
                          g.named_tensor("o", {4}, DType::I64), nn::BagMode::Mean);
    const Node& n = g.node(out.id);
    ASSERT_EQ(n.kind, OpKind::Custom);
    EXPECT_EQ(n.custom->name(), "embedding_bag");
    const auto* op = dynamic_cast<const custom::EmbeddingBag*>(n.custom.get());
    ASSERT_NE(op, nullptr);
    EXPECT_EQ(op->mode(), nn::BagMode::Mean);
    EXPECT_FALSE(op->closed());
    EXPECT_EQ(out.dtype, dt);
    EXPECT_EQ(shape_string(out.dims()), "[4, 6]");
    EXPECT_EQ(n.inputs.size(), 3u);
  }
  Graph g;  // closed offsets [B + 1] give B bags
  const GraphTensor out = custom::embedding_bag(g.named_tensor("t", {10, 6}), g.named_tensor("i", {7}, DType::I64),
                                                g.named_tensor("o", {Expr::sym("B") + Expr(1)}, DType::I64),
                                                nn::BagMode::Sum, true);
  EXPECT_TRUE(dynamic_cast<const custom::EmbeddingBag&>(*g.node(out.id).custom).closed());
  EXPECT_EQ(shape_string(out.dims()), "[B, 6]");
}

TEST(EmbeddingBag, BadInputsAreClearErrors) {
  Graph g;
  const GraphTensor t = g.named_tensor("t", {10, 4});
  const GraphTensor i = g.named_tensor("i", {6}, DType::I32);
  const GraphTensor o = g.named_tensor("o", {3}, DType::I32);
  const nn::BagMode sum = nn::BagMode::Sum;
  expect_error(
      [&] {
        custom::embedding_bag(g.named_tensor("ti", {10, 4}, DType::I32), i, o, sum);
      },
      {"[embedding_bag] table is i32 [10, 4]", "f32, bf16 or f16"});
  expect_error([&] { custom::embedding_bag(g.named_tensor("t1", {10}), i, o, sum); },
               {"[embedding_bag] table is f32 [10]", "2-D"});
  expect_error([&] { custom::embedding_bag(t, g.named_tensor("if", {6}), o, sum); },
               {"[embedding_bag] indices is f32 [6]", "i32 or i64"});
  expect_error(
      [&] {
        custom::embedding_bag(t, g.named_tensor("i2", {2, 3}, DType::I32), o, sum);
      },
      {"[embedding_bag] indices is i32 [2, 3]", "1-D"});
  expect_error([&] { custom::embedding_bag(t, i, g.named_tensor("o64", {3}, DType::I64), sum); },
               {"[embedding_bag] offsets is i64 [3]", "i32", "indices' dtype"});
  expect_error(
      [&] {
        custom::embedding_bag(t, i, g.named_tensor("o2", {3, 1}, DType::I32), sum);
      },
      {"[embedding_bag] offsets is i32 [3, 1]", "1-D"});
  // The op checks its inputs too when used through custom_op directly.
  expect_error(
      [&] {
        custom_op(std::make_shared<custom::EmbeddingBag>(sum), {t, i});
      },
      {"[embedding_bag] 2 inputs, expected 3"});
}

TEST(EmbeddingBag, OutOfRangeIndexFailsOnCpu) {
  Case c = bag_test::random_case(5, 4, 3, nn::BagMode::Sum, DType::F32, DType::I32, 3);
  c.indices.back() = 5;
  expect_error([&] { run_cpu(c, true); }, {"embedding_bag"});
}

// Vector width, threads per bag and column blocks for several d and dtypes.
TEST(EmbeddingBagKernel, Layout) {
  struct Want {
    int64_t d;
    DType dt;
    int64_t vec, threads, bags, cols;
  };
  for (const Want& w : {Want{128, DType::F32, 4, 32, 8, 1}, Want{128, DType::BF16, 8, 16, 16, 1},
                        Want{16, DType::F32, 4, 4, 64, 1}, Want{3, DType::F32, 1, 4, 64, 1},
                        Want{6, DType::F16, 2, 4, 64, 1}, Want{24, DType::F32, 4, 8, 32, 1},
                        Want{4096, DType::F32, 4, 128, 2, 8}, Want{1, DType::BF16, 1, 1, 256, 1}}) {
    const custom::EmbeddingBagLayout l = custom::embedding_bag_layout(w.d, w.dt);
    const std::string what = fmt::format("d {} {}", w.d, dtype_name(w.dt));
    EXPECT_EQ(l.vec, w.vec) << what;
    EXPECT_EQ(l.threads_per_bag, w.threads) << what;
    EXPECT_EQ(l.bags_per_block, w.bags) << what;
    EXPECT_EQ(l.column_blocks, w.cols) << what;
  }
}

// One source per (d, dtypes, mode): a new nnz or batch changes only the grid, so the runtime
// reuses the compiled kernel.
TEST(EmbeddingBagKernel, SourceIndependentOfNnzAndBatch) {
  const custom::EmbeddingBag op(nn::BagMode::Sum);
  auto kernel = [&](int64_t nnz, int64_t batch, DType dt = DType::BF16, int64_t d = 128) {
    return *test::cuda_kernel_for(op, {{1000, d}, {nnz}, {batch}}, {dt, DType::I64, DType::I64});
  };
  const CustomKernel a = kernel(10, 2048), b = kernel(99999, 3);
  EXPECT_EQ(a.source, b.source);
  EXPECT_EQ(a.entry, b.entry);
  EXPECT_EQ(a.grid[0], 128u);  // 2048 bags, 16 per block
  EXPECT_EQ(b.grid[0], 1u);
  EXPECT_EQ(b.block[1], 3u);  // no idle bag rows for a small batch
  EXPECT_NE(kernel(10, 2048, DType::F32).entry, a.entry);
  EXPECT_NE(kernel(10, 2048, DType::BF16, 64).entry, a.entry);
  const custom::EmbeddingBag mean(nn::BagMode::Mean);
  EXPECT_NE(
      test::cuda_kernel_for(mean, {{1000, 128}, {10}, {2048}}, {DType::BF16, DType::I64, DType::I64})->entry,
      a.entry);
  EXPECT_NE(a.source.find("#include \"embedding_bag.cuh\""), std::string::npos);
  // Closed offsets: their own kernel, over one bag fewer than offsets.
  const custom::EmbeddingBag closed(nn::BagMode::Sum, true);
  const CustomKernel k =
      *test::cuda_kernel_for(closed, {{1000, 128}, {10}, {2049}}, {DType::BF16, DType::I64, DType::I64});
  EXPECT_NE(k.entry, a.entry);
  EXPECT_EQ(k.grid[0], 128u);
  EXPECT_NE(k.source.find("VEC, false, true, false>"), std::string::npos) << k.source;  // sum, closed, unweighted
  // Shapes the kernel does not take: the runtime runs the decomposition.
  EXPECT_FALSE(test::cuda_kernel_for(op, {{10, 4}, {5}, {2}}, {DType::F64, DType::I32, DType::I32}));
  EXPECT_FALSE(test::cuda_kernel_for(op, {{10, 4}, {5}, {2}}, {DType::F32, DType::I32, DType::I64}));
  EXPECT_FALSE(test::cuda_kernel_for(op, {{10, 4}, {5}}, {DType::F32, DType::I32}));
}

}  // namespace
}  // namespace luminal
