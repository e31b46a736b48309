// The CrossGemm kernel on the CUDA runtime (device machine only; outputs poisoned first): bf16 and
// f16 against the double-loop oracle and the CPU reference at full, partial and single-row tiles
// and DLRM-v2's cross-layer width, and the batch changing between executes of one runtime.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "custom/cross_gemm/test_util.h"
#include "gpu/gpu_test_util.h"
#include "luminal/compile.h"
#include "luminal/cuda.h"
#include "luminal/reference.h"

namespace luminal {
namespace {

namespace ct = cross_gemm_test;

class CrossGemmGpu : public gpu_test::CudaTest {
 protected:
  void SetUp() override {
    gpu_test::CudaTest::SetUp();
    setenv("LUMINAL_CUDA_POISON", "1", 1);  // an unwritten output stays NaN-like garbage
  }
};

// One rounding of an fp32 result (the kernel) against the oracle; the reference rounds per op.
double kernel_rtol(DType dt) { return dt == DType::BF16 ? 1.0 / 256 : 1.0 / 2048; }
double reference_rtol(DType dt) { return dt == DType::BF16 ? 4.0 / 256 : 4.0 / 2048; }

TEST_F(CrossGemmGpu, MatchesLoopsAndReference) {
  uint32_t seed = 40;
  for (const ct::Core& core : ct::kCores)  // on a 9.0 device every core; elsewhere mma.sync each time
    for (DType dt : {DType::BF16, DType::F16})
      for (auto [m, n, k] : {std::tuple<int64_t, int64_t, int64_t>{1, 8, 8},
                             {37, 136, 40},
                             {300, 256, 64},
                             {129, 3456, 512},
                             {256, 1024, 24}}) {
        const ct::Case c = ct::random_case(m, n, k, dt, seed++);
        SCOPED_TRACE(
            fmt::format("m {} n {} k {} {} {}", m, n, k, dtype_name(dt), core.name));
        Graph g;
        const ct::Bound b = ct::build(g, c, /*dynamic=*/false, core);
        Executable rt(g, cuda::backend());
        for (int rep = 0; rep < 2; ++rep) {  // the second execute replays the captured graph
          ct::set_inputs(rt, b, c);
          rt.execute();
          const std::vector<float> got = rt.get_f32(b.out);
          ASSERT_EQ(ct::mismatch(got, ct::loops(c), ct::magnitudes(c), 1e-6, kernel_rtol(dt)), "")
              << "rep " << rep;
        }
        EXPECT_EQ(rt.kernel_count(), 1u) << "the cross_gemm kernel, not the decomposition";
        ReferenceRuntime ref(g);
        ct::set_inputs(ref, b, c);
        ref.execute();
        const std::vector<float> want = ref.get_f32(b.out);
        ASSERT_EQ(ct::mismatch(rt.get_f32(b.out), std::vector<double>(want.begin(), want.end()),
                               ct::magnitudes(c), 1e-6, reference_rtol(dt)),
                  "")
            << "vs reference";
      }
}

TEST_F(CrossGemmGpu, BatchChangesBetweenExecutes) {
  for (const ct::Core& core : ct::kCores) {
    SCOPED_TRACE(core.name);
    const ct::Case first = ct::random_case(37, 264, 72, DType::BF16, 5);
    Graph g;
    const ct::Bound b = ct::build(g, first, /*dynamic=*/true, core);
    Executable rt(g, cuda::backend());
    for (int64_t m : {37, 130, 1, 256, 37, 16384}) {
      const ct::Case c = ct::random_case(m, 264, 72, DType::BF16, uint32_t(m));
      ct::set_inputs(rt, b, c);
      rt.execute({{"m", m}});
      ASSERT_EQ(ct::mismatch(rt.get_f32(b.out), ct::loops(c), ct::magnitudes(c), 1e-6,
                             kernel_rtol(DType::BF16)),
                "")
          << "batch " << m;
    }
    EXPECT_EQ(rt.kernel_count(), 1u);
  }
}

}  // namespace
}  // namespace luminal
