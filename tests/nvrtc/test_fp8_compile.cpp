// The fp8 precision without a GPU: its quantization kernel compiles for sm_90, and the host
// emulation the GPU tests compare against rounds exactly as CUDA's own e4m3 conversion
// (cuda_fp8.h's host path: round to nearest even, saturating, NaN kept) on every bf16 value.
#include <cuda_fp8.h>

#include <cmath>
#include <cstring>
#include <limits>

#include <gtest/gtest.h>

#include "cuda/runtime/fp8.h"
#include "nvrtc/nvrtc_compile.h"

namespace luminal {
namespace {

TEST(Fp8Compile, QuantizeKernelCompiles) {
  EXPECT_TRUE(test::nvrtc_compiles(cuda::fp8_quantize_source(), cuda::kFp8QuantizeEntry));
}

uint8_t cuda_e4m3(float f) {
  return static_cast<uint8_t>(__nv_cvt_float_to_fp8(f, __NV_SATFINITE, __NV_E4M3));
}

// Every bf16 bit pattern (the activations' and weights' values) times a few scales, so values
// fall between e4m3 steps, on ties, in the subnormals and past 448.
TEST(Fp8Emulation, RoundsAsCudaOnEveryBf16Value) {
  int checked = 0;
  for (uint32_t bits = 0; bits < 0x10000; ++bits) {
    const uint32_t word = bits << 16;
    float v;
    std::memcpy(&v, &word, 4);
    for (float mul : {1.0f, 448.0f / 3.0f, 0.7f, 1.0f / 1024}) {
      const float f = v * mul;
      const uint8_t want = cuda_e4m3(f), got = cuda::e4m3_from_float(f);
      if (std::isnan(f)) {
        ASSERT_EQ(got & 0x7F, 0x7F) << f;  // any NaN code (CUDA's sign of NaN may differ)
        continue;
      }
      ASSERT_EQ(got, want) << "value " << f;
      ++checked;
    }
  }
  EXPECT_GT(checked, 200000);
}

TEST(Fp8Emulation, DecodesEveryCode) {
  for (int c = 0; c < 256; ++c) {
    __nv_fp8_e4m3 q;
    q.__x = static_cast<__nv_fp8_storage_t>(c);
    const float want = float(q), got = cuda::e4m3_to_float(uint8_t(c));
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(got)) << c;
    } else {
      EXPECT_EQ(got, want) << "code " << c;
      EXPECT_EQ(cuda::e4m3_from_float(got), uint8_t(c) == 0x80 ? 0x80 : uint8_t(c)) << c;
    }
  }
}

// A row's scale is amax / 448, so its largest value maps to 448 exactly; zeros get scale 1; NaN
// stays NaN (skipped by the max, as fmaxf does on the device).
TEST(Fp8Emulation, RowScales) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  auto bits = [](float f) {
    uint32_t w;
    std::memcpy(&w, &f, 4);
    return uint16_t(w >> 16);
  };
  const uint16_t row[4] = {bits(-2.0f), bits(0.5f), bits(nan), bits(1.0f)};
  uint8_t q[4];
  EXPECT_FLOAT_EQ(cuda::fp8_quantize_row(row, 4, q), 2.0f / 448.0f);
  EXPECT_EQ(cuda::e4m3_to_float(q[0]), -448.0f);
  EXPECT_EQ(cuda::e4m3_to_float(q[1]), 112.0f);
  EXPECT_TRUE(std::isnan(cuda::e4m3_to_float(q[2])));
  EXPECT_EQ(cuda::e4m3_to_float(q[3]), 224.0f);
  const uint16_t zeros[2] = {0, 0};
  EXPECT_EQ(cuda::fp8_quantize_row(zeros, 2, q), 1.0f);
  EXPECT_EQ(q[0], 0);
  EXPECT_EQ(q[1], 0);
}

}  // namespace
}  // namespace luminal
