// The CPU backend's int8 GEMM (src/cpu/host_int8_matmul.h, compile precision int8) through
// HostMatmul: f32 and bf16, bias and ReLU, against a double loop within the error symmetric int8
// quantization allows (and far from a wrong result); new weights under a new version quantized
// again; a NaN in the activations or weights handed to the float GEMM (it reaches the output);
// weights that may change in place (version 0) never quantized.
#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cpu/host_matmul.h"
#include "cpu_test_util.h"

namespace luminal {
namespace {

using cpu_test::decode;
using cpu_test::randoms;
using cpu_test::encode;

// y = relu(x W^T + bias), x [m, k], W [n, k] (nn.Linear's layout, read as a k x n view).
struct Case {
  int64_t m = 64, n = 40, k = 96;
  DType dt;
  std::vector<float> x, w, bias;
  Case(DType d, uint32_t seed) : dt(d), x(randoms(size_t(m * k), seed)), w(randoms(size_t(n * k), seed + 1)),
                                  bias(randoms(size_t(n), seed + 2)) {}
  compiler::MatmulStep step() const { return cpu_test::linear_step(dt, m, n, k); }
  // W from `weights` when given (a buffer the caller keeps, at an address of its choosing), else
  // encoded for this call.
  std::vector<std::byte> run(cpu::HostMatmul& mm, uint64_t version, const std::vector<std::byte>* weights = nullptr) const {
    const auto xb = encode(dt, x), wb = encode(dt, w), bb = encode(dt, bias);
    std::vector<std::byte> y(size_t(m * n) * dtype_size(dt), std::byte{0xff});  // poison (NaN)
    mm.run({}, xb.data(), weights ? weights->data() : wb.data(), y.data(), bb.data(), version);
    return y;
  }
  // "" when y is within int8 quantization error of the double loop: each product is off by at
  // most |x| dw + |w| dx + dx dw (d = half a quantization step), so the sum by at most that summed.
  std::string mismatch(const std::vector<std::byte>& y) const {
    float xmax = 0;  // activations are quantized with one scale, weights per column
    for (float v : x) xmax = std::max(xmax, std::abs(v));
    for (int64_t j = 0; j < n; ++j) {
      float wmax = 0;
      for (int64_t q = 0; q < k; ++q) wmax = std::max(wmax, std::abs(w[size_t(j * k + q)]));
      for (int64_t i = 0; i < m; ++i) {
        const double dx = xmax / 127.0 / 2, dw = wmax / 127.0 / 2;
        double acc = bias[size_t(j)], bound = dt == DType::BF16 ? 0.01 : 1e-5;
        for (int64_t q = 0; q < k; ++q) {
          const double a = x[size_t(i * k + q)], b = w[size_t(j * k + q)];
          acc += a * b;
          bound += std::abs(a) * dw + std::abs(b) * dx + dx * dw;
        }
        const double want = std::max(acc, 0.0), got = decode(dt, y, size_t(i * n + j));
        if (!(std::abs(got - want) <= bound + (dt == DType::BF16 ? 0.008 * std::abs(want) : 0)))
          return fmt::format("y[{}, {}] = {}, want {} (bound {})", i, j, got, want, bound);
      }
    }
    return "";
  }
};

TEST(CpuInt8Matmul, MatchesALoopWithinQuantizationErrorAndFollowsNewWeights) {
  for (DType dt : {DType::F32, DType::BF16}) {
    Case c(dt, 3);
    cpu::WeightPacks packs(size_t(1) << 30);
    cpu::HostMatmul mm(c.step(), dt, &packs, cpu::HostMatmul::Layout::timed, cpu::HostMatmul::Int8::always);
    EXPECT_EQ(c.mismatch(c.run(mm, cpu::next_input_version())), "") << dtype_name(dt);
    const std::string impl = mm.implementation();
    if (__builtin_cpu_supports("avx512vnni")) {  // every AMX CPU has it
      EXPECT_NE(impl.find("int8"), std::string::npos) << dtype_name(dt) << ": " << impl;
    }
    if (impl.find("int8") == std::string::npos) continue;  // no JIT int8 kernel here: the float GEMM ran
    c.w = randoms(c.w.size(), 17);  // new weights, new version: quantized again
    EXPECT_EQ(c.mismatch(c.run(mm, cpu::next_input_version())), "") << dtype_name(dt) << " (new weights)";
    const uint64_t v = cpu::next_input_version();
    const std::vector<std::byte> first = encode(dt, c.w);
    EXPECT_EQ(c.mismatch(c.run(mm, v, &first)), "") << dtype_name(dt);
    c.w = randoms(c.w.size(), 19);  // other bytes at another address (first is alive) under the same version
    const std::vector<std::byte> second = encode(dt, c.w);
    EXPECT_EQ(c.mismatch(c.run(mm, v, &second)), "") << dtype_name(dt) << " (new address)";
    // A wrong GEMM is far outside the bound: the check can fail.
    std::vector<std::byte> y = c.run(mm, cpu::next_input_version());
    c.bias[0] += 1.f;
    EXPECT_NE(c.mismatch(y), "") << "a result 1.0 off must not pass";
  }
}

TEST(CpuInt8Matmul, TimedModeKeepsEitherGemmAndIsRightWithBoth) {
  Case c(DType::BF16, 9);
  cpu::WeightPacks packs(size_t(1) << 30);
  cpu::HostMatmul mm(c.step(), DType::BF16, &packs, cpu::HostMatmul::Layout::timed, cpu::HostMatmul::Int8::timed);
  for (int call = 0; call < 2; ++call)  // the first call times both, the second runs the winner
    EXPECT_EQ(c.mismatch(c.run(mm, 1000)), "") << "call " << call << ": " << mm.implementation();
}

TEST(CpuInt8Matmul, NonFiniteValuesTakeTheFloatGemm) {
  for (DType dt : {DType::F32, DType::BF16}) {
    Case c(dt, 5);
    cpu::WeightPacks packs(size_t(1) << 30);
    cpu::HostMatmul mm(c.step(), dt, &packs, cpu::HostMatmul::Layout::timed, cpu::HostMatmul::Int8::always);
    c.x[3] = NAN;  // row 0
    const std::vector<std::byte> y = c.run(mm, cpu::next_input_version());
    EXPECT_TRUE(std::isnan(decode(dt, y, 0)) || decode(dt, y, 0) == 0.f) << "row 0 holds a NaN (ReLU may drop it)";
    for (int64_t j = 0; j < c.n; ++j)  // other rows: the float GEMM, exact up to f32 / bf16 rounding
      EXPECT_FALSE(std::isnan(decode(dt, y, size_t(c.n + j)))) << j;
    EXPECT_EQ(mm.implementation().find("int8"), std::string::npos) << mm.implementation();
  }
}

TEST(CpuInt8Matmul, WeightsThatMayChangeInPlaceAreNotQuantized) {
  Case c(DType::F32, 7);
  cpu::WeightPacks packs(size_t(1) << 30);
  cpu::HostMatmul mm(c.step(), DType::F32, &packs, cpu::HostMatmul::Layout::timed, cpu::HostMatmul::Int8::always);
  const std::vector<std::byte> y = c.run(mm, 0);
  EXPECT_EQ(mm.implementation().find("int8"), std::string::npos) << mm.implementation();
  EXPECT_EQ(packs.bytes(), 0u);
  EXPECT_EQ(c.mismatch(y), "");
}

}  // namespace
}  // namespace luminal
