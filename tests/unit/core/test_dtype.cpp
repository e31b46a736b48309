// DType tables and f16/bf16 conversions against hand-computed bit patterns.
#include <gtest/gtest.h>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

#include "luminal/dtype.h"

namespace luminal {
namespace {

TEST(DType, SizesAndNames) {
  EXPECT_EQ(dtype_size(DType::F32), 4u);
  EXPECT_EQ(dtype_size(DType::F16), 2u);
  EXPECT_EQ(dtype_size(DType::BF16), 2u);
  EXPECT_EQ(dtype_size(DType::F64), 8u);
  EXPECT_EQ(dtype_size(DType::I32), 4u);
  EXPECT_EQ(dtype_size(DType::I64), 8u);
  EXPECT_EQ(dtype_size(DType::I8), 1u);
  EXPECT_EQ(dtype_size(DType::U8), 1u);
  EXPECT_EQ(dtype_size(DType::Bool), 1u);
  EXPECT_EQ(dtype_name(DType::F32), "f32");
  EXPECT_EQ(dtype_name(DType::BF16), "bf16");
  EXPECT_EQ(dtype_name(DType::U8), "u8");
  EXPECT_EQ(dtype_name(DType::Bool), "bool");
}

TEST(DType, Classification) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    EXPECT_TRUE(is_float(dt)) << dtype_name(dt);
    EXPECT_FALSE(is_integer(dt)) << dtype_name(dt);
  }
  for (DType dt : {DType::I32, DType::I64, DType::I8, DType::U8}) {
    EXPECT_FALSE(is_float(dt)) << dtype_name(dt);
    EXPECT_TRUE(is_integer(dt)) << dtype_name(dt);
  }
  EXPECT_FALSE(is_float(DType::Bool));
  EXPECT_FALSE(is_integer(DType::Bool));
}

TEST(DType, SafetensorsNames) {
  const std::pair<const char*, DType> table[] = {
      {"F32", DType::F32}, {"F16", DType::F16}, {"BF16", DType::BF16},
      {"F64", DType::F64}, {"I32", DType::I32}, {"I64", DType::I64},
      {"I8", DType::I8},   {"U8", DType::U8},   {"BOOL", DType::Bool}};
  for (auto [name, dt] : table) {
    EXPECT_EQ(dtype_from_safetensors(name), dt) << name;
    EXPECT_EQ(safetensors_name(dt), name);
  }
  EXPECT_EQ(dtype_from_safetensors("F8_E4M3"), std::nullopt);
  EXPECT_EQ(dtype_from_safetensors("f32"), std::nullopt);
  EXPECT_EQ(dtype_from_safetensors(""), std::nullopt);
  EXPECT_EQ(dtype_from_safetensors("I16"), std::nullopt);
}

TEST(DType, InvalidEnumThrows) {
  auto bad = static_cast<DType>(42);
  try {
    (void)dtype_size(bad);
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("[dtype] invalid dtype 42"), std::string::npos)
        << e.what();
  }
  EXPECT_THROW((void)dtype_name(bad), std::invalid_argument);
}

TEST(F16, EncodeExactValues) {
  EXPECT_EQ(f32_to_f16_bits(1.0f), 0x3C00);
  EXPECT_EQ(f32_to_f16_bits(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_f16_bits(0.5f), 0x3800);
  EXPECT_EQ(f32_to_f16_bits(0.0f), 0x0000);
  EXPECT_EQ(f32_to_f16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_f16_bits(65504.0f), 0x7BFF);               // max finite
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -14)), 0x0400);  // min normal
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -24)), 0x0001);  // min subnormal
  EXPECT_EQ(f32_to_f16_bits(1023 * std::ldexp(1.0f, -24)), 0x03FF);
  EXPECT_EQ(f32_to_f16_bits(0.333251953125f), 0x3555);
}

TEST(F16, EncodeRoundsToNearestEven) {
  // 0.1f = 0x3DCCCCCD; f16 0x2E66 = 0.0999755859375, next 0x2E67 = 0.10003662109375.
  EXPECT_EQ(f32_to_f16_bits(0.1f), 0x2E66);
  const float u = std::ldexp(1.0f, -11);             // half an ulp of f16 at 1.0
  EXPECT_EQ(f32_to_f16_bits(1.0f + u), 0x3C00);      // tie -> even
  EXPECT_EQ(f32_to_f16_bits(1.0f + 3 * u), 0x3C02);  // tie -> even
  EXPECT_EQ(f32_to_f16_bits(1.0f + u + std::ldexp(1.0f, -20)), 0x3C01);      // above tie
  EXPECT_EQ(f32_to_f16_bits(1.0f + 2 * u - std::ldexp(1.0f, -20)), 0x3C01);  // below next
  EXPECT_EQ(f32_to_f16_bits(65519.0f), 0x7BFF);  // below the 65520 midpoint
  EXPECT_EQ(f32_to_f16_bits(65520.0f), 0x7C00);  // tie with odd 0x7BFF -> rounds up to inf
  EXPECT_EQ(f32_to_f16_bits(1e6f), 0x7C00);
  EXPECT_EQ(f32_to_f16_bits(-1e6f), 0xFC00);
  // Subnormal ties: 2^-25 is half the min subnormal -> 0; 3*2^-25 -> 2 (even).
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(f32_to_f16_bits(std::ldexp(1.0f, -25) * 1.5f), 0x0001);
  EXPECT_EQ(f32_to_f16_bits(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(f32_to_f16_bits(-std::ldexp(1.0f, -30)), 0x8000);
  EXPECT_EQ(f32_to_f16_bits(FLT_TRUE_MIN), 0x0000);
  // Largest subnormal + half an ulp ties to even 0x0400 (min normal).
  EXPECT_EQ(f32_to_f16_bits(1023.5f * std::ldexp(1.0f, -24)), 0x0400);
}

TEST(F16, SpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(f32_to_f16_bits(inf), 0x7C00);
  EXPECT_EQ(f32_to_f16_bits(-inf), 0xFC00);
  uint16_t nan = f32_to_f16_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_EQ(nan & 0x7C00, 0x7C00);
  EXPECT_NE(nan & 0x03FF, 0);
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(0x7E00)));
  EXPECT_TRUE(std::isnan(f16_bits_to_f32(0x7C01)));
  EXPECT_EQ(f16_bits_to_f32(0x7C00), inf);
  EXPECT_EQ(f16_bits_to_f32(0xFC00), -inf);
}

TEST(F16, Decode) {
  EXPECT_EQ(f16_bits_to_f32(0x3C00), 1.0f);
  EXPECT_EQ(f16_bits_to_f32(0xC000), -2.0f);
  EXPECT_EQ(f16_bits_to_f32(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_bits_to_f32(0x3555), 0.333251953125f);
  EXPECT_EQ(f16_bits_to_f32(0x0001), 5.9604644775390625e-08f);
  EXPECT_EQ(f16_bits_to_f32(0x03FF), 6.0975551605224609375e-05f);
  EXPECT_EQ(f16_bits_to_f32(0x0400), 6.103515625e-05f);
  float nz = f16_bits_to_f32(0x8000);
  EXPECT_EQ(nz, 0.0f);
  EXPECT_TRUE(std::signbit(nz));
}

// Every finite half survives a round trip, and values just around each midpoint round correctly.
TEST(F16, ExhaustiveRoundTripAndMidpoints) {
  for (uint32_t h = 0; h < 0x7C00; ++h) {
    for (uint32_t sign : {0u, 0x8000u}) {
      auto bits = static_cast<uint16_t>(h | sign);
      ASSERT_EQ(f32_to_f16_bits(f16_bits_to_f32(bits)), bits) << std::hex << bits;
    }
    if (h + 1 >= 0x7C00) continue;
    double lo = f16_bits_to_f32(static_cast<uint16_t>(h));
    double hi = f16_bits_to_f32(static_cast<uint16_t>(h + 1));
    auto mid = static_cast<float>((lo + hi) / 2);  // exact: 12 significant bits
    uint16_t even = (h & 1) ? h + 1 : h;
    ASSERT_EQ(f32_to_f16_bits(mid), even) << std::hex << h;
    ASSERT_EQ(f32_to_f16_bits(std::nextafter(mid, 0.0f)), h) << std::hex << h;
    ASSERT_EQ(f32_to_f16_bits(std::nextafter(mid, 1e9f)), h + 1) << std::hex << h;
  }
}

TEST(BF16, Encode) {
  EXPECT_EQ(f32_to_bf16_bits(1.0f), 0x3F80);
  EXPECT_EQ(f32_to_bf16_bits(-2.0f), 0xC000);
  EXPECT_EQ(f32_to_bf16_bits(0.0f), 0x0000);
  EXPECT_EQ(f32_to_bf16_bits(-0.0f), 0x8000);
  EXPECT_EQ(f32_to_bf16_bits(1.00390625f), 0x3F80);  // 1 + 2^-8: tie -> even
  EXPECT_EQ(f32_to_bf16_bits(1.01171875f), 0x3F82);  // 1 + 3*2^-8: tie -> even
  EXPECT_EQ(f32_to_bf16_bits(1.00390625f + std::ldexp(1.0f, -20)), 0x3F81);
  EXPECT_EQ(f32_to_bf16_bits(3.14159265f), 0x4049);  // 0x40490FDB truncates
  EXPECT_EQ(f32_to_bf16_bits(FLT_MAX), 0x7F80);      // rounds up to inf
  EXPECT_EQ(f32_to_bf16_bits(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(f32_to_bf16_bits(-std::numeric_limits<float>::infinity()), 0xFF80);
}

TEST(BF16, NaNStaysNaN) {
  uint16_t q = f32_to_bf16_bits(std::numeric_limits<float>::quiet_NaN());
  EXPECT_TRUE(std::isnan(bf16_bits_to_f32(q)));
  // A NaN whose payload sits only in the low 16 bits must not truncate to inf.
  float low_payload;
  uint32_t bits = 0x7F800001u;
  std::memcpy(&low_payload, &bits, 4);
  uint16_t b = f32_to_bf16_bits(low_payload);
  EXPECT_EQ(b & 0x7F80, 0x7F80);
  EXPECT_NE(b & 0x007F, 0);
}

TEST(BF16, Decode) {
  EXPECT_EQ(bf16_bits_to_f32(0x3F80), 1.0f);
  EXPECT_EQ(bf16_bits_to_f32(0x4049), 3.140625f);
  EXPECT_EQ(bf16_bits_to_f32(0xC000), -2.0f);
  EXPECT_EQ(bf16_bits_to_f32(0x7F80), std::numeric_limits<float>::infinity());
  EXPECT_EQ(bf16_bits_to_f32(0x0001), std::ldexp(1.0f, -133));  // smallest subnormal
}

TEST(HalfStructs, WrapConversions) {
  EXPECT_EQ(f16(1.0f).bits, 0x3C00);
  EXPECT_EQ(static_cast<float>(f16(65504.0f)), 65504.0f);
  EXPECT_EQ(bf16(1.0f).bits, 0x3F80);
  EXPECT_EQ(static_cast<float>(bf16(3.14159265f)), 3.140625f);
  EXPECT_EQ(f16().bits, 0);
  EXPECT_EQ(bf16().bits, 0);
}

}  // namespace
}  // namespace luminal
