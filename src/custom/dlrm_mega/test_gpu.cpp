// The DLRM megakernel on the CUDA runtime (device machine only; outputs poisoned first): one kernel
// per forward, equal to the plain-loop oracle and to PyTorch fixtures within 1e-5, uniform and
// jagged (offsets) bags, sum and mean; out-of-range indices and bad offsets reported.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "custom/dlrm_mega/op.h"
#include "custom/dlrm_mega/test_util.h"
#include "gpu/gpu_test_util.h"
#include "luminal/cuda.h"
#include "models/dlrm/mega.h"
#include "unit/dlrm/fixture_run.h"
#include "luminal/models/dlrm.h"
#include "luminal/safetensors.h"
#include "test_caps.h"
#include "luminal/compile.h"

namespace luminal {
namespace {

using dlrm_test::config;
using dlrm_test::jagged;
using dlrm_test::max_abs_diff;
using nn::BagMode;

class DlrmMegaGpu : public gpu_test::CudaTest {
 protected:
  void SetUp() override {
    gpu_test::CudaTest::SetUp();
    setenv("LUMINAL_CUDA_POISON", "1", 1);  // an output the kernel does not write stays garbage
  }
};

// Runs build_dlrm_mega (and build_dlrm) on the CUDA runtime against the loop oracle.
void check_model(const models::DlrmConfig& c, uint32_t seed) {
  ASSERT_EQ(custom::why_unsupported(models::mega_shape(c), test::h200_caps()), "");
  const dlrm_test::Model m = dlrm_test::random_model(c, seed);
  const std::string path = dlrm_test::temp_path(fmt::format("gpu{}.safetensors", seed));
  dlrm_test::write_weights(m, path);
  const std::vector<double> want = dlrm_test::forward_loops(m);
  for (int mega = 1; mega >= 0; --mega) {
    Graph g;
    const models::DlrmGraph dg = mega ? models::build_dlrm_mega(g, c) : models::build_dlrm(g, c);
    Executable rt(g, cuda::backend());
    load_safetensors(rt, path);
    for (int rep = 0; rep < 2; ++rep) {  // the second execute replays the captured plan
      dlrm_test::set_inputs(rt, dg, m);
      rt.execute(dlrm_test::dyn_of(m));
      EXPECT_LE(max_abs_diff(rt.get_f32(dg.out), want), 1e-5) << (mega ? "mega" : "graph path") << " rep " << rep;
    }
    if (mega) {
      EXPECT_EQ(rt.kernel_count(), 1u) << "the whole forward is one kernel";
    }
  }
  std::filesystem::remove(path);
}

TEST_F(DlrmMegaGpu, SeedShape) { check_model(config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 2048), 11); }

TEST_F(DlrmMegaGpu, EightTablesBag3) {
  check_model(config({13, 16, 8}, {10, 20, 30, 40, 50, 60, 70, 80}, {44, 16, 1}, 2048, 3), 12);
}

TEST_F(DlrmMegaGpu, DeepI64) {
  check_model(config({13, 64, 32, 16}, {100, 50, 25}, {22, 64, 32, 1}, 2048, 2, DType::I64), 13);
}

TEST_F(DlrmMegaGpu, PartialLastBlockAndBatchOne) {
  check_model(config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 1000), 14);
  check_model(config({13, 8, 4}, {10, 20, 30}, {10, 1}, 1), 15);
}

TEST_F(DlrmMegaGpu, WeightsBeyondSharedMemory) {
  check_model(config({64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 16}, {100, 100}, {19, 64, 1}, 512), 16);
}

TEST_F(DlrmMegaGpu, UniformMean) {
  check_model(dlrm_test::with_mode(
                  config({13, 16, 8}, {10, 20, 30, 40, 50, 60, 70, 80}, {44, 16, 1}, 2048, 3),
                  BagMode::Mean),
              18);
}

// PyTorch EmbeddingBag bags: lengths 0..3 (one of 10), empty bags at both ends.
TEST_F(DlrmMegaGpu, JaggedSumI32) {
  check_model(jagged(config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 2048)), 19);
}

TEST_F(DlrmMegaGpu, JaggedMeanI64) {
  check_model(jagged(config({13, 64, 32, 16}, {100, 50, 25}, {22, 64, 32, 1}, 1000, 1, DType::I64),
                     BagMode::Mean),
              20);
}

TEST_F(DlrmMegaGpu, JaggedMeanI32AndSumI64ManyTables) {
  check_model(jagged(config({13, 64, 16}, std::vector<int64_t>(26, 1000), {367, 64, 1}, 512),
                     BagMode::Mean),
              21);
  check_model(
      jagged(config({13, 64}, std::vector<int64_t>(8, 1000), {100, 64, 1}, 300, 1, DType::I64)),
      22);
}

// One built model, executes with other bags (another nnz_k each time): the kernel reads nnz at run
// time.
TEST_F(DlrmMegaGpu, JaggedNewNnzEachExecute) {
  const models::DlrmConfig c =
      jagged(config({13, 16, 8}, {50, 60, 70}, {14, 16, 1}, 777), BagMode::Mean);
  dlrm_test::Model m = dlrm_test::random_model(c, 23);
  const std::string path = dlrm_test::temp_path("gpu_nnz.safetensors");
  dlrm_test::write_weights(m, path);
  Graph g;
  const models::DlrmGraph dg = models::build_dlrm_mega(g, c);
  Executable rt(g, cuda::backend());
  load_safetensors(rt, path);
  std::mt19937 rng(24);
  for (int64_t max_bag : {3, 0, 8, 1}) {  // 0: empty bags but one (nnz_k = 0 for tables 0 and 2)
    m.indices.clear();
    m.offsets.clear();
    dlrm_test::random_jagged(m, rng, max_bag);
    dlrm_test::set_inputs(rt, dg, m);
    rt.execute(dlrm_test::dyn_of(m));
    EXPECT_LE(max_abs_diff(rt.get_f32(dg.out), dlrm_test::forward_loops(m)), 1e-5)
        << "max bag " << max_bag;
  }
  EXPECT_EQ(rt.kernel_count(), 1u);
  std::filesystem::remove(path);
}

// Expects execute + read of model m to raise the kernel's error word with `key` in the message
// (error bits: 1 = an index out of range, 4 = bad embedding-bag offsets).
void expect_raises(const dlrm_test::Model& m, const std::string& what, const std::string& key) {
  const std::string path = dlrm_test::temp_path("gpu_bad.safetensors");
  dlrm_test::write_weights(m, path);
  Graph g;
  const models::DlrmGraph dg = models::build_dlrm_mega(g, m.c);
  Executable rt(g, cuda::backend());
  load_safetensors(rt, path);
  dlrm_test::set_inputs(rt, dg, m);
  try {
    rt.execute(dlrm_test::dyn_of(m));
    rt.get_f32(dg.out);
    ADD_FAILURE() << what << " must raise";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << what << ": " << e.what();
  }
  std::filesystem::remove(path);
}

TEST_F(DlrmMegaGpu, JaggedBadOffsetsAndIndicesRaise) {
  const dlrm_test::Model good =
      dlrm_test::random_model(jagged(config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 256)), 25);
  dlrm_test::Model m = good;
  m.offsets[0][255] = static_cast<int64_t>(m.indices[0].size()) + 1;
  expect_raises(m, "offset past nnz", "bad embedding-bag offsets");
  m = good;
  m.offsets[1][10] = m.offsets[1][11] + 1;
  expect_raises(m, "decreasing offsets", "bad embedding-bag offsets");
  m = good;
  m.offsets[2][0] = -1;
  expect_raises(m, "negative offset", "bad embedding-bag offsets");
  m = good;
  m.indices[1][m.indices[1].size() / 2] = 20;  // table 1 has 20 rows
  expect_raises(m, "index == rows", "out-of-range gather index");
  m = good;
  m.indices[2].back() = -1;
  expect_raises(m, "negative index", "out-of-range gather index");
}

TEST_F(DlrmMegaGpu, OutOfRangeIndexRaises) {
  const models::DlrmConfig c = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 256, 2);
  dlrm_test::Model m = dlrm_test::random_model(c, 17);
  m.indices[2][77] = 30;  // table 2 has 30 rows
  const std::string path = dlrm_test::temp_path("gpu_oob.safetensors");
  dlrm_test::write_weights(m, path);
  Graph g;
  const models::DlrmGraph dg = models::build_dlrm_mega(g, c);
  Executable rt(g, cuda::backend());
  load_safetensors(rt, path);
  dlrm_test::set_inputs(rt, dg, m);
  try {
    rt.execute();
    rt.get_f32(dg.out);
    ADD_FAILURE() << "an out-of-range index must raise";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("out-of-range"), std::string::npos) << e.what();
  }
  std::filesystem::remove(path);
}

// PyTorch-pinned fixtures (tests/fixtures/dlrm/<name>).
void check_fixture(const std::string& name) {
  const dlrm_test::Fixture f = dlrm_test::load_fixture(name);
  EXPECT_LE(max_abs_diff(dlrm_test::run_fixture(f, true, cuda::backend()), f.expected), 1e-5) << name;
}

TEST_F(DlrmMegaGpu, PyTorchFixtures) {
  for (const char* f : {"seed", "tables8_bag3", "deep"}) check_fixture(f);
}

// The fixtures with PyTorch's offsets as jagged inputs ("jagged": every table its own bag sizes).
TEST_F(DlrmMegaGpu, PyTorchFixturesJagged) {
  for (const char* name : {"jagged", "seed", "tables8_bag3", "deep"}) {
    const dlrm_fixture::Files f(name);
    const models::DlrmConfig c = dlrm_fixture::config(f, Precision::F32, true);
    Graph g;
    const models::DlrmGraph dg = models::build_dlrm_mega(g, c);
    Executable rt(g, cuda::backend());
    EXPECT_LE(
        dlrm_fixture::max_abs_diff(dlrm_fixture::run(rt, dg, c, f), dlrm_fixture::expected(f)),
        1e-5)
        << name;
    EXPECT_EQ(rt.kernel_count(), 1u) << name;
  }
}

}  // namespace
}  // namespace luminal
