// RmsNorm on the CPU reference runtime: the decomposition is nn::rms_norm (bit for bit) and agrees
// with the plain-loop oracle (f32 / bf16 / f16, one row and many, 3-D x); clear errors for bad
// inputs; the kernel generator's host side (layout, refusals, a source independent of rows).
#include <gtest/gtest.h>

#include "custom/rms_norm/test_util.h"
#include "expect_error.h"
#include "luminal/reference.h"
#include "test_caps.h"

namespace luminal {
namespace {

using norm_test::Case;

std::vector<float> run_cpu(const Case& c, bool fused) {
  Graph g;
  const norm_test::Bound b = norm_test::build(g, c, fused);
  ReferenceRuntime rt(g);
  norm_test::set_inputs(rt, b, c);
  rt.execute({});
  return rt.get_f32(b.out);
}

TEST(RmsNorm, DecompositionIsNnRmsNormAndMatchesLoops) {
  uint32_t seed = 1;
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (int64_t rows : {1, 5})
      for (int64_t d : {8, 100}) {
        const Case c = norm_test::random_case(rows, d, dt, seed++, rows == 1 ? 1e-6 : 1e-5);
        const std::vector<float> fused = run_cpu(c, true);
        EXPECT_EQ(fused, run_cpu(c, false)) << c.describe();
        EXPECT_EQ(norm_test::mismatch(fused, norm_test::loops(c), 1e-6, norm_test::rtol_of(dt)), "")
            << c.describe();
      }
}

TEST(RmsNorm, HandChecked) {
  // Row (3, 4): mean square 12.5, eps 0 -> x / sqrt(12.5); weights (1, 2).
  Case c;
  c.rows = 1, c.d = 2, c.eps = 0.0, c.x = {3, 4}, c.w = {1, 2};
  const std::vector<float> got = run_cpu(c, true);
  ASSERT_EQ(got.size(), 2u);
  EXPECT_FLOAT_EQ(got[0], 3.f / std::sqrt(12.5f));
  EXPECT_FLOAT_EQ(got[1], 8.f / std::sqrt(12.5f));
}

TEST(RmsNorm, LeadingDimsAreRows) {
  const Case c = norm_test::random_case(6, 16, DType::F32, 9);
  Graph g;
  const GraphTensor x = g.named_tensor("x", {2, 3, 16}), w = g.named_tensor("w", {16});
  GraphTensor out = custom_op(std::make_shared<custom::RmsNorm>(c.eps), {x, w});
  EXPECT_EQ(shape_string(out.dims()), "[2, 3, 16]");
  out.output();
  ReferenceRuntime rt(g);
  rt.set_data(x, std::span<const float>(c.x));
  rt.set_data(w, std::span<const float>(c.w));
  rt.execute({});
  EXPECT_EQ(norm_test::mismatch(rt.get_f32(out), norm_test::loops(c), 1e-6, 1e-5), "");
}

TEST(RmsNorm, BadInputsAreNamed) {
  Graph g;
  const GraphTensor x = g.named_tensor("x", {4, 8}), w = g.named_tensor("w", {8});
  auto op = std::make_shared<custom::RmsNorm>(1e-6);
  test::expect_error([&] { custom_op(op, {x, g.named_tensor("w2", {7})}); },
                     {"[rms_norm] weight is f32 [7]", "expected [8] f32"});
  test::expect_error([&] { custom_op(op, {x, g.named_tensor("w3", {8}, DType::BF16)}); },
                     {"[rms_norm] weight is bf16 [8]"});
  test::expect_error([&] { custom_op(op, {g.named_tensor("i", {4, 8}, DType::I32), w}); },
                     {"[rms_norm] x is i32 [4, 8]"});
  test::expect_error([&] { custom_op(op, {x}); }, {"[rms_norm] 1 inputs, expected 2"});
}

TEST(RmsNorm, KernelLayoutAndRefusals) {
  auto l = custom::rms_norm_layout(2048, DType::BF16);  // Llama-3.2-1B: 256 threads x 16 bytes
  ASSERT_TRUE(l);
  EXPECT_EQ(l->vec, 8);
  EXPECT_EQ(l->threads, 256);
  EXPECT_EQ(l->per_thread, 1);
  l = custom::rms_norm_layout(100, DType::F32);  // a warp, 16-byte loads
  ASSERT_TRUE(l);
  EXPECT_EQ(l->vec, 4);
  EXPECT_EQ(l->threads, 32);
  l = custom::rms_norm_layout(101, DType::BF16);  // scalar loads
  ASSERT_TRUE(l);
  EXPECT_EQ(l->vec, 1);
  EXPECT_EQ(l->threads, 128);
  l = custom::rms_norm_layout(16384, DType::F32);
  ASSERT_TRUE(l);
  EXPECT_EQ(l->threads, 512);
  EXPECT_EQ(l->per_thread, 8);
  EXPECT_FALSE(custom::rms_norm_layout(16385 * 4, DType::F32));
  EXPECT_NE(custom::rms_norm_refusal(1 << 20, DType::F32).find("registers"), std::string::npos);
  EXPECT_NE(custom::rms_norm_refusal(64, DType::F64).find("not f64"), std::string::npos);
  EXPECT_EQ(custom::rms_norm_refusal(2048, DType::BF16), "");
}

TEST(RmsNorm, KernelSourceDependsOnDimsNotRows) {
  const custom::RmsNorm op(1e-5);
  auto one = test::cuda_kernel_for(op, {{1, 2048}, {2048}}, {DType::BF16, DType::BF16});
  auto many = test::cuda_kernel_for(op, {{4, 128, 2048}, {2048}}, {DType::BF16, DType::BF16});
  ASSERT_TRUE(one && many);
  EXPECT_EQ(one->source, many->source);
  EXPECT_EQ(one->entry, many->entry);
  EXPECT_EQ(one->grid[0], 1u);
  EXPECT_EQ(many->grid[0], 512u);
  EXPECT_EQ(one->block[0], 256u);
  EXPECT_NE(one->source.find("9.999999747e-06f"), std::string::npos) << one->source;  // float(1e-5)
  EXPECT_NE(one->source.find("4.882812500e-04f"), std::string::npos) << one->source;  // 1 / 2048
  EXPECT_NE(test::cuda_kernel_for(custom::RmsNorm(1e-6), {{1, 2048}, {2048}}, {DType::BF16, DType::BF16})->entry,
            one->entry);
  EXPECT_FALSE(test::cuda_kernel_for(op, {{1, 2048}, {2048}}, {DType::BF16, DType::F32}));
  EXPECT_FALSE(test::cuda_kernel_for(op, {{1, 2048}, {1024}}, {DType::F32, DType::F32}));
  EXPECT_FALSE(test::cuda_kernel_for(op, {{0, 2048}, {2048}}, {DType::F32, DType::F32}));
}

}  // namespace
}  // namespace luminal
