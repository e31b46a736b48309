// Runs every op-consistency case on the CUDA runtime against the reference runtime, with and
// without CUDA graphs, every output and the arena poisoned (0xFF bytes) before each execute so a
// kernel that skips an element cannot pass.
//
// Needs the harness (tests/ops/harness.cpp, values.cpp, cases/*.cpp) linked into this binary and
// LUMINAL_GPU_HARNESS defined (tests/CMakeLists.txt). Without them a single test fails on a GPU
// machine (and skips elsewhere) so the gap cannot go unnoticed.
#ifndef LUMINAL_GPU_HARNESS
#include <gtest/gtest.h>

#include "luminal/cuda.h"

TEST(CudaOps, HarnessIsLinkedIntoTheGpuTests) {
  if (!luminal::cuda::available()) GTEST_SKIP() << "no CUDA device";
  FAIL() << "the op harness is not linked into luminal_gpu_tests: add tests/ops/harness.cpp, "
            "tests/ops/values.cpp and tests/ops/cases/*.cpp to it and define LUMINAL_GPU_HARNESS";
}
#else
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>

#include "compiler/kernel_plan.h"
#include "cuda/codegen/kernels.h"
#include "cuda/runtime/jit_cache.h"
#include "luminal/cuda.h"
#include "ops/harness.h"
#include "gpu_options.h"
#include "luminal/compile.h"

namespace luminal::ops_test {
namespace {

// Outputs and intermediates are poisoned before every run: a case whose kernels skip an element
// fails instead of reading stale memory.
RuntimeFactory cuda_factory(bool graphs) {
  return [graphs](const Graph& g) -> std::unique_ptr<Runtime> {
    cuda::CudaOptions o;
    o.cuda_graph = graphs;
    o.poison = true;
    return compile(g, cuda::backend(o));
  };
}

class CudaOps : public ::testing::TestWithParam<OpCase> {
 protected:
  void SetUp() override {
    if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::device_description();
  }
};

TEST_P(CudaOps, MatchesReference) {
  run_case_on(GetParam(), cuda_factory(true), /*compare_to_reference=*/true);
}

TEST_P(CudaOps, MatchesReferenceWithoutGraphs) {
  run_case_on(GetParam(), cuda_factory(false), /*compare_to_reference=*/true);
}

// The first execute resolves and runs step by step; later ones replay the captured graph.
// Both must agree (within the dtype tolerance: generated reductions may use atomics).
TEST_P(CudaOps, GraphReplayMatchesFirstRun) {
  const OpCase& c = GetParam();
  Graph g;
  CaseIO io = c.build(g);
  Executable rt(g, cuda::backend());
  std::vector<std::vector<std::vector<double> > > runs;
  for (int run = 0; run < 3; ++run) {
    for (const auto& [t, v] : io.inputs) set_input(rt, t, v);
    rt.execute(io.dyn);
    std::vector<std::vector<double> > outs;
    for (const GraphTensor& t : io.outputs) outs.push_back(read_output(rt, t));
    runs.push_back(std::move(outs));
  }
  for (int run = 1; run < 3; ++run) {
    for (size_t o = 0; o < io.outputs.size(); ++o) {
      const Tolerance tol = default_tolerance(io.outputs[o].dtype);
      const std::vector<double>& want = runs[0][o];
      const std::vector<double>& got = runs[size_t(run)][o];
      ASSERT_EQ(got.size(), want.size()) << c.name << " result #" << o;
      for (size_t i = 0; i < got.size(); ++i) {
        const bool same = (std::isnan(got[i]) && std::isnan(want[i])) || got[i] == want[i] ||
                          std::abs(got[i] - want[i]) <= tol.atol + tol.rtol * std::abs(want[i]);
        ASSERT_TRUE(same) << c.name << " result #" << o << " replay " << run << " element " << i
                          << ": " << got[i] << " vs first run " << want[i];
      }
    }
  }
}

// Every generated kernel of every case compiles under NVRTC. Needs the toolkit, not a GPU: it runs
// in CI and warms $LUMINAL_CACHE_DIR, which tools/gpu-run can carry to the device machine.
// Custom-op kernels are generated at execute time (they depend on dims) and are not covered.
class PrecompileKernels : public ::testing::TestWithParam<OpCase> {};

TEST_P(PrecompileKernels, EveryPlanKernelCompiles) {
  Graph g;
  CaseIO io = GetParam().build(g);
  const compiler::KernelPlan plan = cuda::codegen::lower_and_render(g);
  // The H200's architecture when there is no device here; the device's own when there is one.
  const std::string target = cuda::available() ? cuda::nvrtc_target_of_device(0) : "sm_90a";
  for (const compiler::Step& st : plan.steps) {
    if (const auto* k = std::get_if<compiler::KernelStep>(&st)) {
      EXPECT_NO_THROW(cuda::JitCache::global().get(k->source, k->name, target))
          << GetParam().name << " " << k->name;
    }
  }
}

std::string param_name(const ::testing::TestParamInfo<OpCase>& info) {
  std::string s = info.param.name;
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}

INSTANTIATE_TEST_SUITE_P(OpCase, CudaOps, ::testing::ValuesIn(op_cases()), param_name);
INSTANTIATE_TEST_SUITE_P(OpCase, PrecompileKernels, ::testing::ValuesIn(op_cases()), param_name);

}  // namespace
}  // namespace luminal::ops_test
#endif  // LUMINAL_GPU_HARNESS
