// The CPU backend's GEMV (src/cpu/host_gemv.h), which HostMatmul runs for one row against
// k-contiguous weights when it timed faster than oneDNN: f32 and bf16, with and without bias and
// ReLU, row counts that leave a remainder after the four-row blocks, a row stride past k, against
// a double-precision loop; outputs poisoned first.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "cpu/host_gemv.h"
#include "cpu_test_util.h"

namespace luminal {
namespace {

using cpu_test::decode;
using cpu_test::encode;

std::vector<float> randoms(size_t n, std::mt19937& rng) {
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

TEST(CpuGemv, MatchesADoubleLoop) {
  std::mt19937 rng(7);
  for (DType dt : {DType::F32, DType::BF16})
    for (int64_t n : {1, 5, 67, 300})
      for (int64_t k : {1, 3, 64, 1000})
        for (int variant = 0; variant < 3; ++variant) {  // plain, bias, bias + relu
          const int64_t ldw = k + (n % 2 == 0 ? 0 : 3);
          const auto xv = randoms(size_t(k), rng), wv = randoms(size_t(n * ldw), rng), bv = randoms(size_t(n), rng);
          const auto x = encode(dt, xv), w = encode(dt, wv), bias = encode(DType::F32, bv);
          std::vector<std::byte> y(size_t(n) * dtype_size(dt), std::byte{0x7f});  // poison
          cpu::gemv(dt, x.data(), w.data(), ldw, n, k, y.data(), variant > 0 ? bias.data() : nullptr, DType::F32,
                    variant == 2);
          const double tol = dt == DType::BF16 ? 1e-2 : 1e-5;
          for (int64_t j = 0; j < n; ++j) {
            double want = 0, mag = 0;
            for (int64_t i = 0; i < k; ++i) {
              const double p = double(decode(dt, x, size_t(i))) * decode(dt, w, size_t(j * ldw + i));
              want += p, mag += std::abs(p);
            }
            if (variant > 0) want += bv[size_t(j)], mag += std::abs(bv[size_t(j)]);
            if (variant == 2 && want < 0) want = 0;
            ASSERT_NEAR(decode(dt, y, size_t(j)), want, tol * (1 + mag))
                << dtype_name(dt) << " n " << n << " k " << k << " variant " << variant << " row " << j;
          }
        }
}

TEST(CpuGemv, SupportsFloatDtypesOnly) {
  EXPECT_TRUE(cpu::gemv_supports(DType::BF16, DType::BF16));
  EXPECT_TRUE(cpu::gemv_supports(DType::BF16, DType::F32));
  EXPECT_TRUE(cpu::gemv_supports(DType::F32, DType::F32));
  EXPECT_FALSE(cpu::gemv_supports(DType::F64, DType::F64));
  EXPECT_FALSE(cpu::gemv_supports(DType::F16, DType::F16));
}

}  // namespace
}  // namespace luminal
