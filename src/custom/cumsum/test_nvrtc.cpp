// NVRTC compile checks of the generated Cumsum kernel for sm_90 (no GPU needed): every dtype, one
// line or many, strided lines (inner > 1), no spills; one source per (dtype, outer, inner), not per
// length, and no kernel for a dtype or an extent it does not take.
#include <gtest/gtest.h>

#include "custom/cumsum/op.h"
#include "nvrtc/nvrtc_compile.h"
#include "test_caps.h"

namespace luminal::custom {
namespace {

TEST(CumsumNvrtc, EveryDtypeCompiles) {
  for (DType dt : {DType::I32, DType::I64, DType::F32, DType::F64})
    for (auto [outer, inner] : {std::pair<int64_t, int64_t>{26, 1}, {1, 1}, {3, 7}}) {
      SCOPED_TRACE(fmt::format("{} {} x {}", dtype_name(dt), outer, inner));
      const CustomKernel k = emit_cumsum(dt, outer, inner);
      ASSERT_TRUE(test::compiles_without_spills(k.source, k.entry));
      EXPECT_EQ(k.grid[0], unsigned(outer * inner));
    }
}

TEST(CumsumNvrtc, OneSourceServesEveryLength) {
  const Cumsum op(1);
  const auto at = [&](int64_t len, DType dt) { return test::cuda_kernel_for(op, {{26, len}}, {dt}); };
  const auto a = at(2048, DType::I64), b = at(5, DType::I64);
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->source, b->source);
  EXPECT_EQ(a->grid[0], 26u);
  EXPECT_FALSE(at(2048, DType::BF16)) << "bf16 is refused (the frontend scans in f32)";
  EXPECT_FALSE(at(0, DType::I64)) << "an empty line";
  EXPECT_NE(at(7, DType::F32)->entry, a->entry);
}

}  // namespace
}  // namespace luminal::custom
