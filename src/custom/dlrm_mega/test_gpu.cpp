// The DLRM megakernel on the CUDA runtime (device machine only): one kernel per forward, equal to
// the plain-loop oracle and to PyTorch fixtures within 1e-5, out-of-range indices reported.
#include <gtest/gtest.h>

#include <filesystem>

#include "custom/dlrm_mega/op.h"
#include "custom/dlrm_mega/test_util.h"
#include "gpu/gpu_test_util.h"
#include "luminal/cuda.h"

namespace luminal {
namespace {

using dlrm_test::config;
using dlrm_test::max_abs_diff;

class DlrmMegaGpu : public gpu_test::CudaTest {};

// Runs build_dlrm_mega (and build_dlrm) on the CUDA runtime against the loop oracle.
void check_model(const nn::DlrmConfig& c, uint32_t seed) {
  ASSERT_EQ(custom::why_unsupported(c), "");
  const dlrm_test::Model m = dlrm_test::random_model(c, seed);
  const std::string path = dlrm_test::temp_path(fmt::format("gpu{}.safetensors", seed));
  dlrm_test::write_weights(m, path);
  const std::vector<double> want = dlrm_test::forward_loops(m);
  for (int mega = 1; mega >= 0; --mega) {
    Graph g;
    const nn::DlrmGraph dg = mega ? nn::build_dlrm_mega(g, c) : nn::build_dlrm(g, c);
    cuda::CudaRuntime rt(g);
    rt.load_safetensors(path);
    for (int rep = 0; rep < 2; ++rep) {  // the second execute replays the captured plan
      dlrm_test::set_inputs(rt, dg, m);
      rt.execute();
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

TEST_F(DlrmMegaGpu, OutOfRangeIndexRaises) {
  const nn::DlrmConfig c = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 256, 2);
  dlrm_test::Model m = dlrm_test::random_model(c, 17);
  m.indices[2][77] = 30;  // table 2 has 30 rows
  const std::string path = dlrm_test::temp_path("gpu_oob.safetensors");
  dlrm_test::write_weights(m, path);
  Graph g;
  const nn::DlrmGraph dg = nn::build_dlrm_mega(g, c);
  cuda::CudaRuntime rt(g);
  rt.load_safetensors(path);
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
  EXPECT_LE(max_abs_diff(dlrm_test::run_fixture<cuda::CudaRuntime>(f, true), f.expected), 1e-5) << name;
}

TEST_F(DlrmMegaGpu, PyTorchFixtures) {
  for (const char* f : {"seed", "tables8_bag3", "deep"}) check_fixture(f);
}

}  // namespace
}  // namespace luminal
