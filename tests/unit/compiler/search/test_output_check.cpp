// The search's output check (compare_output): tolerances follow the dtype and the model's
// precision; an f32 output of a bf16 model (DLRM's logit) gets bf16 tolerances, an fp32 model's
// does not; sizes and non-finite values are reported.
#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/search/output_check.h"

namespace luminal::compiler::search {
namespace {

std::vector<std::byte> f32_bytes(const std::vector<float>& v) {
  std::vector<std::byte> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

TEST(OutputCheck, F32OutputOfABf16ModelGetsBf16Tolerance) {
  // Measured on an H100: a bf16 DLRM-v2 whose cross layers round once (fused) vs after each op.
  const ReferenceOutput ref{7, DType::F32, f32_bytes({0.5f, -0.0009765625f, 2.f})};
  const std::vector<std::byte> got = f32_bytes({0.5f, -0.0010986328125f, 2.f});
  EXPECT_NE(compare_output(ref, got, Precision::F32), "") << "fp32 models keep f32 tolerances";
  EXPECT_EQ(compare_output(ref, got, Precision::BF16), "");
  EXPECT_EQ(compare_output(ref, got, Precision::Int8), "");
  const std::vector<std::byte> wrong = f32_bytes({0.5f, -0.0009765625f, 2.2f});
  EXPECT_NE(compare_output(ref, wrong, Precision::BF16), "") << "10% off is not rounding";
}

// fp8 GEMMs round each operand to 3 mantissa bits: a plan that runs one product in bf16 instead
// (the GEMV at a few rows) differs by a few percent, which bf16 tolerances would call wrong.
TEST(OutputCheck, Fp8ModelsGetFp8Tolerance) {
  const ReferenceOutput ref{7, DType::F32, f32_bytes({0.5f, -1.25f, 2.f})};
  const std::vector<std::byte> got = f32_bytes({0.52f, -1.3f, 2.1f});
  EXPECT_NE(compare_output(ref, got, Precision::BF16), "");
  EXPECT_EQ(compare_output(ref, got, Precision::FP8), "");
  EXPECT_NE(compare_output(ref, f32_bytes({0.5f, -1.25f, 2.8f}), Precision::FP8), "")
      << "40% off is not fp8 rounding";
}

TEST(OutputCheck, SizeAndNonFiniteDifferencesAreReported) {
  const ReferenceOutput ref{3, DType::F32, f32_bytes({1.f, 2.f})};
  EXPECT_NE(compare_output(ref, f32_bytes({1.f}), Precision::BF16).find("bytes"), std::string::npos);
  EXPECT_NE(compare_output(ref, f32_bytes({1.f, 1.f / 0.f}), Precision::BF16), "");
}

}  // namespace
}  // namespace luminal::compiler::search
