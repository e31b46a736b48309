// The CrossGemm mma.sync core (cross_gemm.cuh, passed on H100s) run by the host emulation
// (tests/emu) against the double-loop oracle: partial row, column and k tiles, bf16 and f16. As the
// kernel is GPU-proven, this is the check of the emulation's ldmatrix / mma.sync fragment tables
// that the emulated tests of newer kernels rely on.
#include <gtest/gtest.h>

#include "custom/cross_gemm/cross_gemm.cuh"
#include "custom/cross_gemm/test_util.h"

namespace luminal {
namespace {

using cross_gemm_test::Case;

std::vector<uint16_t> bits(const std::vector<float>& v, bool f16) { return emu::bits16(v, f16); }

template <bool F16, int N, int K>
void check(int64_t m, uint32_t seed) {
  SCOPED_TRACE(fmt::format("m {} n {} k {} {}", m, N, K, F16 ? "f16" : "bf16"));
  const Case c = cross_gemm_test::random_case(m, N, K, F16 ? DType::F16 : DType::BF16, seed);
  const auto u = bits(c.u, F16), w = bits(c.w, F16), b = bits(c.b, F16), x0 = bits(c.x0, F16), xl = bits(c.xl, F16);
  std::vector<uint16_t> out(size_t(m * N), 0x7fc1);  // poison: NaN in both formats
  const unsigned cols = (N + 127) / 128, rows = unsigned((m + 127) / 128);
  // The grid is (column blocks, row blocks): the emulation runs a 1-D grid, so map it back.
  emu::launch(cols * rows, cross_gemm::kThreads, cross_gemm::kSharedBytes, 1, [&] {
    const unsigned flat = blockIdx.x;
    blockIdx = {flat % cols, flat / cols, 0};
    cross_gemm::run<F16, N, K>(u.data(), w.data(), b.data(), x0.data(), xl.data(), out.data(), m);
  });
  std::vector<float> got;
  for (uint16_t h : out) got.push_back(F16 ? f16_bits_to_f32(h) : bf16_bits_to_f32(h));
  // One rounding of the result to 16 bits, plus float accumulation.
  EXPECT_EQ(cross_gemm_test::mismatch(got, cross_gemm_test::loops(c), cross_gemm_test::magnitudes(c), 1e-6,
                                      F16 ? 2e-3 : 8e-3),
            "");
}

TEST(CrossGemmEmu, MmaSyncCoreMatchesLoops) {
  check<false, 136, 40>(130, 1);  // two column blocks (the second 8 wide), two row blocks, k 32 + 8
  check<true, 136, 40>(130, 2);
  check<false, 24, 64>(7, 3);     // one partial tile, two full k tiles
}

}  // namespace
}  // namespace luminal
