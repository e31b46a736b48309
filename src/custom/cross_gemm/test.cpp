// CrossGemm on the CPU: its decomposition on the reference runtime against the double-loop oracle
// (f32, bf16, f16; a dynamic batch), the builder's errors naming the tensor, and the kernel's
// launch shape and declines (no GPU needed).
#include <gtest/gtest.h>

#include <cmath>

#include "custom/cross_gemm/test_util.h"
#include "expect_error.h"
#include "luminal/reference.h"
#include "test_caps.h"

namespace luminal {
namespace {

namespace ct = cross_gemm_test;

TEST(CrossGemm, DecompositionMatchesLoops) {
  uint32_t seed = 11;
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    const ct::Case c = ct::random_case(7, 24, 16, dt, seed++);
    Graph g;
    const ct::Bound b = ct::build(g, c, /*dynamic=*/true);
    ReferenceRuntime rt(g);
    ct::set_inputs(rt, b, c);
    rt.execute({{"m", c.m}});
    const std::vector<float> got = rt.get_f32(b.out);
    const std::vector<double> want = ct::loops(c);
    // The reference rounds after each op in 16-bit dtypes.
    const double rtol = dt == DType::F32 ? 1e-6 : dt == DType::BF16 ? 3.0 / 256 : 3.0 / 2048;
    EXPECT_EQ(ct::mismatch(got, want, ct::magnitudes(c), 1e-6, rtol), "") << dtype_name(dt);
    double biggest = 0;
    for (double v : want) biggest = std::max(biggest, std::abs(v));
    EXPECT_GT(biggest, 0.1) << "the case is not all zeros";
  }
}

TEST(CrossGemm, BuilderNamesTheTensorThatDoesNotFit) {
  Graph g;
  const Expr m = Expr::sym("m");
  const GraphTensor u = g.named_tensor("u", {m, 16}, DType::BF16), w = g.named_tensor("w", {24, 16}, DType::BF16),
                    b = g.named_tensor("b", {24}, DType::BF16), x0 = g.named_tensor("x0", {m, 24}, DType::BF16),
                    xl = g.named_tensor("xl", {m, 24}, DType::BF16);
  test::expect_error([&] { custom::cross_gemm(u, g.named_tensor("w2", {24, 8}, DType::BF16), b, x0, xl); },
                     {"[cross_gemm] W is [24, 8] bf16, expected [24, 16] bf16"});
  test::expect_error([&] { custom::cross_gemm(u, w, g.named_tensor("b2", {23}, DType::BF16), x0, xl); },
                     {"[cross_gemm] b is [23]"});
  test::expect_error([&] { custom::cross_gemm(u, w, b, g.named_tensor("x02", {m, 24}), xl); },
                     {"[cross_gemm] x0 is [m, 24] f32, expected [m, 24] bf16"});
  test::expect_error([&] { custom::cross_gemm(u, w, b, x0, g.named_tensor("xl2", {5, 24}, DType::BF16)); },
                     {"[cross_gemm] xl is [5, 24]"});
  EXPECT_NO_THROW(custom::cross_gemm(u, w, b, x0, xl));
}

TEST(CrossGemm, KernelLaunchShapeAndDeclines) {
  auto kernel = [](int64_t m, int64_t n, int64_t k, DType dt, const DeviceCaps& caps) {
    return test::cuda_kernel_for(custom::CrossGemm({n, k, dt}), {{m, k}, {n, k}, {n}, {m, n}, {m, n}},
                                 std::vector<DType>(5, dt), caps);
  };
  const auto k = kernel(2048, 3456, 512, DType::BF16, test::h200_caps());
  ASSERT_TRUE(k);
  EXPECT_EQ(k->grid[0], 27u);  // 3456 / 128 column tiles
  EXPECT_EQ(k->grid[1], 16u);  // 2048 / 128 row tiles
  EXPECT_EQ(k->block[0], 256u);
  EXPECT_EQ(k->shared_bytes, 99328u) << "the wgmma core on 9.0: 3 stages of 32 KiB + alignment";
  EXPECT_NE(k->source.find("cross_gemm_sm90::run"), std::string::npos);
  EXPECT_EQ(kernel(300, 3456, 512, DType::BF16, test::h200_caps())->grid[1], 3u) << "a partial row tile";
  EXPECT_EQ(kernel(300, 3456, 512, DType::BF16, test::h200_caps())->source, k->source) << "one kernel for every batch";
  EXPECT_TRUE(kernel(5, 16, 8, DType::F16, test::h200_caps()));
  EXPECT_FALSE(kernel(5, 16, 8, DType::F32, test::h200_caps())) << "f32: the decomposition (the GEMM library)";
  EXPECT_FALSE(kernel(5, 12, 8, DType::BF16, test::h200_caps())) << "n not a multiple of 8";
  EXPECT_FALSE(kernel(5, 16, 12, DType::BF16, test::h200_caps())) << "k not a multiple of 8";
  DeviceCaps ampere = test::h200_caps();
  ampere.cc_major = 8;
  const auto a100 = kernel(2048, 3456, 512, DType::BF16, ampere);
  ASSERT_TRUE(a100);
  EXPECT_EQ(a100->shared_bytes, 65536u) << "the mma.sync core: 4 stages of 16 KiB";
  EXPECT_NE(a100->source.find("cross_gemm::run"), std::string::npos);
  EXPECT_EQ(a100->grid, k->grid);
  const auto kept = test::cuda_kernel_for(custom::CrossGemm({3456, 512, DType::BF16, /*wgmma=*/false}),
                                          {{2048, 512}, {3456, 512}, {3456}, {2048, 3456}, {2048, 3456}},
                                          std::vector<DType>(5, DType::BF16));
  ASSERT_TRUE(kept);
  EXPECT_EQ(kept->source, a100->source) << "wgmma = false keeps the mma.sync core on 9.0";
  DeviceCaps turing = test::h200_caps();
  turing.cc_major = 7;
  EXPECT_FALSE(kernel(5, 16, 8, DType::BF16, turing)) << "no cp.async / bf16 mma before sm_80";
}

}  // namespace
}  // namespace luminal
