// Shared helpers of the GPU tests: the skip-without-device fixture and exception checks.
#pragma once

#include "expect_error.h"

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "luminal/cuda.h"

namespace luminal::gpu_test {

/// Skips the test cleanly on machines without a CUDA device (the CPU CI runs this binary too).
class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cuda::available()) GTEST_SKIP() << "no CUDA device: " << cuda::device_description();
  }
};

/// Runs f, expecting an exception whose message contains every one of `parts`.
using ::luminal::test::expect_error;

/// Element-wise |got - want| <= atol + rtol * |want| (NaN never matches).
inline void expect_all_near(const std::vector<float>& got, const std::vector<float>& want,
                            double atol, double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok =
        std::abs(double(got[i]) - double(want[i])) <= atol + rtol * std::abs(double(want[i]));
    ASSERT_TRUE(ok) << what << " element " << i << ": got " << got[i] << ", want " << want[i];
  }
}

/// n deterministic values spread over [lo, hi) without zeros (never test on zeros).
inline std::vector<float> spread(size_t n, float lo, float hi, unsigned seed = 1) {
  std::vector<float> v(n);
  unsigned s = seed * 2654435761u + 12345u;
  for (size_t i = 0; i < n; ++i) {
    s = s * 1664525u + 1013904223u;
    float u = float((s >> 8) & 0xffffff) / float(1 << 24);
    v[i] = lo + (hi - lo) * u;
    if (v[i] == 0.0f) v[i] = 0.5f;
  }
  return v;
}

}  // namespace luminal::gpu_test
