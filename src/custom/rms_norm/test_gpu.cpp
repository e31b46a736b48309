// The RmsNorm kernel on the CUDA runtime (device machine only; outputs poisoned first): every
// dtype at D = 2048 (Llama-3.2-1B) and odd D, one row (decode) and 512 (prefill), against the
// plain-loop oracle and the CPU reference; rows changing between executes; an input starting
// inside a buffer at an odd address (scalar loads); the rule's "fused" graph on the device; and
// the kernel's time at Llama's shapes.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "compiler/rules/rules.h"
#include "custom/rms_norm/test_util.h"
#include "gpu/gpu_test_util.h"
#include "luminal/reference.h"
#include "luminal/cuda.h"
#include "luminal/compile.h"

namespace luminal {
namespace {

using norm_test::Case;

class RmsNormGpu : public gpu_test::CudaTest {
 protected:
  void SetUp() override {
    gpu_test::CudaTest::SetUp();
    setenv("LUMINAL_CUDA_POISON", "1", 1);  // unwritten output stays NaN-like garbage
  }
};

// A 16-bit result may land one rounding away (the fp32 sum's order differs from the reference's).
double atol_of(DType dt) { return dt == DType::F32 ? 1e-5 : 1e-2; }

std::vector<float> run(const Case& c, bool gpu) {
  Graph g;
  const norm_test::Bound b = norm_test::build(g, c, true);
  std::vector<float> out;
  if (!gpu) {
    ReferenceRuntime rt(g);
    norm_test::set_inputs(rt, b, c);
    rt.execute({});
    return rt.get_f32(b.out);
  }
  Executable rt(g, cuda::backend());
  for (int rep = 0; rep < 2; ++rep) {  // the second execute replays the captured graph
    norm_test::set_inputs(rt, b, c);
    rt.execute({});
    out = rt.get_f32(b.out);
  }
  EXPECT_EQ(rt.kernel_count(), 1u) << "the norm kernel, not the decomposition";
  return out;
}

void check_case(const Case& c) {
  const std::vector<float> got = run(c, true);
  const double atol = atol_of(c.dtype), rtol = norm_test::rtol_of(c.dtype);
  ASSERT_EQ(norm_test::mismatch(got, norm_test::loops(c), atol, rtol), "") << c.describe();
  const std::vector<float> cpu = run(c, false);
  ASSERT_EQ(norm_test::mismatch(got, std::vector<double>(cpu.begin(), cpu.end()), atol, rtol), "")
      << c.describe() << " vs cpu";
}

TEST_F(RmsNormGpu, AllDtypesMatchLoopsAndCpu) {
  uint32_t seed = 10;
  for (int64_t d : {1, 8, 100, 101, 2048, 4096, 16384})
    for (DType dt : {DType::F32, DType::BF16, DType::F16})
      for (int64_t rows : {1, 3, 512}) check_case(norm_test::random_case(rows, d, dt, seed++));
}

TEST_F(RmsNormGpu, RowsChangeBetweenExecutes) {
  Graph g;
  const GraphTensor x = g.named_tensor("x", {Expr::sym("s"), 2048}, DType::BF16);
  const GraphTensor w = g.named_tensor("w", {2048}, DType::BF16);
  GraphTensor out = custom_op(std::make_shared<custom::RmsNorm>(1e-5), {x, w}).output();
  Executable rt(g, cuda::backend());
  for (int64_t rows : {1, 7, 512, 1}) {
    const Case c = norm_test::random_case(rows, 2048, DType::BF16, uint32_t(rows));
    norm_test::set_floats(rt, x, c.x, c.dtype);
    norm_test::set_floats(rt, w, c.w, c.dtype);
    rt.execute({{"s", rows}});
    ASSERT_EQ(norm_test::mismatch(rt.get_f32(out), norm_test::loops(c), 1e-2, 1.0 / 64), "")
        << c.describe();
  }
}

TEST_F(RmsNormGpu, InputInsideABufferAtAnOddAddress) {
  // x = big[1:] with D = 100 bf16: the input starts 200 bytes into its buffer (not 16-aligned).
  const Case c = norm_test::random_case(5, 100, DType::BF16, 77);
  Graph g;
  const GraphTensor big = g.named_tensor("big", {6, 100}, DType::BF16);
  const GraphTensor w = g.named_tensor("w", {100}, DType::BF16);
  GraphTensor out =
      custom_op(std::make_shared<custom::RmsNorm>(c.eps), {big.slice(0, 1, 6), w}).output();
  Executable rt(g, cuda::backend());
  std::vector<float> padded(100, 9.f);  // row 0 is not part of x
  padded.insert(padded.end(), c.x.begin(), c.x.end());
  norm_test::set_floats(rt, big, padded, c.dtype);
  norm_test::set_floats(rt, w, c.w, c.dtype);
  rt.execute({});
  ASSERT_EQ(norm_test::mismatch(rt.get_f32(out), norm_test::loops(c), 1e-2, 1.0 / 64), "");
}

TEST_F(RmsNormGpu, RuleFusedGraphMatchesCpu) {
  for (DType dt : {DType::F32, DType::BF16}) {
    Graph g;
    const GraphTensor x = g.named_tensor("x", {4, 2048}, dt), h = g.named_tensor("h", {4, 2048}, dt);
    const GraphTensor w = g.named_tensor("w", {2048}, dt);
    GraphTensor out = nn::rms_norm(x + h, w, 1e-5).output();
    const auto matches = compiler::rules::find_matches(compiler::rules::RuleContext{g, nullptr, cuda::backend().get()});
    const compiler::rules::Applied a = compiler::rules::apply(g, matches, "fused");
    ASSERT_TRUE(a.rebuilt);
    const compiler::rules::Rebuilt& r = *a.rebuilt;
    auto set = [&](Runtime& rt, bool moved) {
      auto mv = [&](const GraphTensor& t) { return moved ? compiler::rules::moved(r, t) : t; };
      norm_test::set_floats(rt, mv(x), gpu_test::spread(4 * 2048, -2, 2, 1), dt);
      norm_test::set_floats(rt, mv(h), gpu_test::spread(4 * 2048, -2, 2, 2), dt);
      norm_test::set_floats(rt, mv(w), gpu_test::spread(2048, 0.5, 1.5, 3), dt);
    };
    ReferenceRuntime cpu(g);
    set(cpu, false);
    cpu.execute({});
    Executable gpu(*r.graph, cuda::backend());
    set(gpu, true);
    gpu.execute({});
    gpu_test::expect_all_near(gpu.get_f32(compiler::rules::moved(r, out)), cpu.get_f32(out),
                              atol_of(dt), norm_test::rtol_of(dt), std::string(dtype_name(dt)));
  }
}

}  // namespace
}  // namespace luminal
