// NVRTC compile checks of the generated DLRM megakernel for sm_90 (no GPU needed): it compiles, and
// ptxas keeps every activation in registers (no local-memory spills).
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <map>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "custom/dlrm_mega/op.h"
#include "custom/dlrm_mega/plan.h"
#include "custom/dlrm_mega/test_util.h"
#include "nvrtc/nvrtc_compile.h"
#include "luminal/models/dlrm.h"
#include "models/dlrm/mega.h"
#include "test_caps.h"

namespace luminal::custom {
namespace {

// Compiles a kernel source to sm_90 CUBIN; the log includes ptxas -v (stack frame and spills).
test::NvrtcCompile compile_sm90(const CustomKernel& k) {
  return test::nvrtc_compile_sm90(k.source, k.entry, {"-std=c++20", "-default-device", "--ptxas-options=-v"});
}

using dlrm_test::config;
using dlrm_test::jagged;
using nn::BagMode;

void expect_compiles(const models::DlrmConfig& c) {
  ASSERT_EQ(why_unsupported(models::mega_shape(c), test::h200_caps()), "");
  const CustomKernel k = emit_dlrm_mega(models::mega_shape(c), test::h200_caps());
  const test::NvrtcCompile r = compile_sm90(k);
  ASSERT_TRUE(r.ok) << "NVRTC failed for " << k.entry << "\n--- log ---\n" << r.log << "\n--- source ---\n"
                    << k.source;
  // ptxas -v: "N bytes stack frame, N bytes spill stores, N bytes spill loads".
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.log, m, std::regex(R"((\d+) bytes stack frame, (\d+) bytes spill stores)")))
      << r.log;
  EXPECT_EQ(m[1].str(), "0") << "local memory used (an activation left registers)\n" << r.log << k.source;
  EXPECT_EQ(m[2].str(), "0") << "register spills\n" << r.log << k.source;
  EXPECT_NE(k.source.find("extern \"C\" __global__"), std::string::npos);
}

TEST(DlrmMegaNvrtc, SeedShape) {
  const models::DlrmConfig c = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 2048, 1);
  expect_compiles(c);
  const CustomKernel k = emit_dlrm_mega(models::mega_shape(c), test::h200_caps());
  EXPECT_EQ(k.block[0] * k.grid[0] % 2048, 0u);  // grid covers the batch exactly here
  EXPECT_GE(static_cast<long long>(k.block[0]) * k.grid[0], 2048);
}

TEST(DlrmMegaNvrtc, EightTablesBag3) {
  expect_compiles(config({13, 16, 8}, {10, 20, 30, 40, 50, 60, 70, 80}, {44, 16, 1}, 2048, 3));
}

TEST(DlrmMegaNvrtc, DeepBottomTwoTopHidden) {
  expect_compiles(config({13, 64, 32, 16}, {100, 50, 25}, {22, 64, 32, 1}, 2048, 2));
}

TEST(DlrmMegaNvrtc, I64IndicesHugeTableOddBatch) {
  // A 40M-row table needs 64-bit row offsets; batch 1000 leaves a partial last block.
  expect_compiles(config({13, 8, 4}, {40'000'000, 20, 30}, {10, 8, 1}, 1000, 1, DType::I64));
}

TEST(DlrmMegaNvrtc, WeightsBeyondSharedMemoryReadGlobal) {
  const models::DlrmConfig c = config({64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 16}, {100, 100}, {19, 64, 1}, 512, 1);
  const MegaPlanResult p = plan_dlrm_mega(models::mega_shape(c), test::h200_caps());
  ASSERT_TRUE(p.plan) << p.why;
  EXPECT_GT(p.plan->staged, 0);
  EXPECT_LT(p.plan->staged, static_cast<int>(p.plan->layers.size()));
  expect_compiles(c);
}

TEST(DlrmMegaNvrtc, TopWithoutHiddenLayerBatchOne) {
  expect_compiles(config({13, 8, 4}, {10, 20, 30}, {10, 1}, 1, 1));
}

TEST(DlrmMegaNvrtc, OneLanePerSampleAtLargeBatch) {
  const models::DlrmConfig c = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 65536, 1);
  ASSERT_EQ(plan_dlrm_mega(models::mega_shape(c), test::h200_caps()).plan->lanes, 1);
  expect_compiles(c);
}

TEST(DlrmMegaNvrtc, UniformMeanBag3) {
  expect_compiles(dlrm_test::with_mode(
      config({13, 16, 8}, {10, 20, 30, 40, 50, 60, 70, 80}, {44, 16, 1}, 2048, 3), BagMode::Mean));
}

// PyTorch EmbeddingBag bags (offsets; nnz read at run time), sum and mean, i32 and i64.
TEST(DlrmMegaNvrtc, JaggedSumAndMeanI32AndI64) {
  for (DType idx : {DType::I32, DType::I64}) {
    for (BagMode mode : {BagMode::Sum, BagMode::Mean}) {
      expect_compiles(jagged(config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 2048, 1, idx), mode));
      expect_compiles(jagged(
          config({13, 64, 32, 16}, {40'000'000, 50, 25}, {22, 64, 32, 1}, 1000, 1, idx), mode));
    }
  }
}

TEST(DlrmMegaNvrtc, JaggedManyTablesWideRowsBatchOne) {
  // 26 tables of d = 16 (the Kaggle shape's sparse side) and 8 tables of d = 64.
  expect_compiles(jagged(config({13, 64, 16}, std::vector<int64_t>(26, 1000), {367, 64, 1}, 2048)));
  expect_compiles(
      jagged(config({13, 64}, std::vector<int64_t>(8, 1000), {100, 64, 1}, 2048, 1, DType::I64),
             BagMode::Mean));
  expect_compiles(jagged(config({13, 8, 4}, {10, 20, 30}, {10, 1}, 1)));
}

// The batch is read at run time (n_dense_x): two batches with the same lanes/block plan share one
// source, so a dynamic batch compiles a handful of kernels, not one per batch.
TEST(DlrmMegaNvrtc, BatchesWithOnePlanShareOneSource) {
  models::DlrmConfig a = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 100000, 1);
  models::DlrmConfig b = a;
  b.batch = 200000;
  const MegaPlanResult pa = plan_dlrm_mega(models::mega_shape(a), test::h200_caps()), pb = plan_dlrm_mega(models::mega_shape(b), test::h200_caps());
  ASSERT_TRUE(pa.plan && pb.plan);
  ASSERT_EQ(pa.plan->lanes, pb.plan->lanes);
  ASSERT_EQ(pa.plan->block, pb.plan->block);
  const CustomKernel ka = emit_dlrm_mega(models::mega_shape(a), test::h200_caps()), kb = emit_dlrm_mega(models::mega_shape(b), test::h200_caps());
  EXPECT_EQ(ka.source, kb.source);
  EXPECT_EQ(ka.entry, kb.entry);
  EXPECT_GT(kb.grid[0], ka.grid[0]);
  EXPECT_GE(int64_t(kb.grid[0]) * kb.block[0], b.batch * pb.plan->lanes);
  EXPECT_NE(ka.source.find("kBatch = n_dense_x / 13"), std::string::npos);
  expect_compiles(a);
}

}  // namespace
}  // namespace luminal::custom
