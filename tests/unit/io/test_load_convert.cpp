// load_safetensors with LoadOptions::convert_floats: float dtype conversion on the host (RNE).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "expect_error.h"
#include "luminal/reference.h"
#include "luminal/safetensors.h"
#include "unit/io/io_test_util.h"

namespace luminal {
namespace {

using test::expect_error;
using test::TempDir;

std::vector<std::byte> bits16(const std::vector<uint16_t>& bits) {
  std::vector<std::byte> out(bits.size() * 2);
  std::memcpy(out.data(), bits.data(), out.size());
  return out;
}

std::vector<uint16_t> as_bits16(const std::vector<std::byte>& bytes) {
  std::vector<uint16_t> out(bytes.size() / 2);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

std::vector<float> as_floats(const std::vector<std::byte>& bytes) {
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

// A graph with one persisted input "w" of dtype dt and shape [n]; the runtime reads it back.
struct OneInput {
  Graph g;
  GraphTensor w;
  OneInput(DType dt, int64_t n) : w(g.named_tensor("w", {n}, dt).persist()) { w.sum(0).output(); }
};

TEST(LoadConvert, F32FileIntoBf16InputRoundsToNearestEven) {
  TempDir tmp;
  const std::string path = tmp.file("w.safetensors");
  // 1 + 2^-8 is halfway between bf16 1.0 (0x3F80) and 1.0078125 (0x3F81): ties to even 0x3F80.
  // 1 + 3 * 2^-8 is halfway between 0x3F81 and 0x3F82: ties to even 0x3F82.
  // 1 + 2^-8 + 2^-20 is just above halfway: rounds up to 0x3F81. -2.5 is exact (0xC020).
  const std::vector<float> v{1.00390625f, 1.01171875f, 1.0f + 0.00390625f + 0x1p-20f, -2.5f};
  write_safetensors(path, {make_tensor_data<float>("w", {4}, v)});
  OneInput m(DType::BF16, 4);
  ReferenceRuntime rt(m.g);
  LoadOptions opts;
  opts.convert_floats = true;
  EXPECT_EQ(load_safetensors(rt, path, opts), 1u);
  EXPECT_EQ(as_bits16(rt.get_bytes(m.w)), (std::vector<uint16_t>{0x3F80, 0x3F82, 0x3F81, 0xC020}));
}

TEST(LoadConvert, Bf16RoundTripThroughF32) {
  TempDir tmp;
  // bf16 bits: 1.0, -0.0, a subnormal, the largest finite, -inf, pi rounded, 2^-126.
  const std::vector<uint16_t> bits{0x3F80, 0x8000, 0x0001, 0x7F7F, 0xFF80, 0x4049, 0x0080};
  const std::vector<float> want{1.0f,      -0.0f,     0x1p-133f, 0x1.FEp127f,
                                -INFINITY, 3.140625f, 0x1p-126f};
  write_safetensors(tmp.file("b.safetensors"), {TensorData{"w", DType::BF16, {7}, bits16(bits)}});
  LoadOptions opts;
  opts.convert_floats = true;
  OneInput f32(DType::F32, 7);
  ReferenceRuntime rt(f32.g);
  load_safetensors(rt, tmp.file("b.safetensors"), opts);
  const std::vector<float> got = as_floats(rt.get_bytes(f32.w));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(std::memcmp(&got[i], &want[i], 4), 0) << i << ": " << got[i] << " vs " << want[i];
  }
  // And back: the f32 values load into a bf16 input as the original bits.
  write_safetensors(tmp.file("f.safetensors"), {make_tensor_data<float>("w", {7}, got)});
  OneInput bf(DType::BF16, 7);
  ReferenceRuntime rt2(bf.g);
  load_safetensors(rt2, tmp.file("f.safetensors"), opts);
  EXPECT_EQ(as_bits16(rt2.get_bytes(bf.w)), bits);
}

TEST(LoadConvert, F16IntoF32AndBf16) {
  TempDir tmp;
  // f16: 1.5, -2.0, 65504 (max), 2^-24 (smallest subnormal), 1 + 2^-10.
  const std::vector<uint16_t> h{0x3E00, 0xC000, 0x7BFF, 0x0001, 0x3C01};
  write_safetensors(tmp.file("h.safetensors"), {TensorData{"w", DType::F16, {5}, bits16(h)}});
  LoadOptions opts;
  opts.convert_floats = true;
  OneInput f32(DType::F32, 5);
  ReferenceRuntime rt(f32.g);
  load_safetensors(rt, tmp.file("h.safetensors"), opts);
  EXPECT_EQ(as_floats(rt.get_bytes(f32.w)),
            (std::vector<float>{1.5f, -2.0f, 65504.0f, 0x1p-24f, 1.0009765625f}));
  OneInput bf(DType::BF16, 5);
  ReferenceRuntime rt2(bf.g);
  load_safetensors(rt2, tmp.file("h.safetensors"), opts);
  // 65504 = 0x477FE0 -> bf16 0x4780 (rounds up to 65536); 1 + 2^-10 -> 1.0 (0x3F80).
  EXPECT_EQ(as_bits16(rt2.get_bytes(bf.w)),
            (std::vector<uint16_t>{0x3FC0, 0xC000, 0x4780, 0x3380, 0x3F80}));
}

TEST(LoadConvert, F32IntoF16SaturatesAndRounds) {
  TempDir tmp;
  // 65520 is halfway between 65504 and the next step (65536, overflow): ties to even -> inf.
  const std::vector<float> v{65520.0f, 65519.0f, 0.1f, -1e-8f};
  write_safetensors(tmp.file("w.safetensors"), {make_tensor_data<float>("w", {4}, v)});
  LoadOptions opts;
  opts.convert_floats = true;
  OneInput h(DType::F16, 4);
  ReferenceRuntime rt(h.g);
  load_safetensors(rt, tmp.file("w.safetensors"), opts);
  // 0.1 -> 0x2E66; -1e-8 is below half the smallest subnormal (2^-25): -0.
  EXPECT_EQ(as_bits16(rt.get_bytes(h.w)), (std::vector<uint16_t>{0x7C00, 0x7BFF, 0x2E66, 0x8000}));
}

TEST(LoadConvert, WithoutTheOptionAMismatchIsAnErrorWithAHint) {
  TempDir tmp;
  write_safetensors(tmp.file("w.safetensors"),
                    {make_tensor_data<float>("w", {2}, std::vector<float>{1, 2})});
  OneInput m(DType::BF16, 2);
  ReferenceRuntime rt(m.g);
  expect_error([&] { load_safetensors(rt, tmp.file("w.safetensors")); },
               {"[load_safetensors]", "'w' is f32, graph input is bf16", "convert_floats"});
}

TEST(LoadConvert, NonFloatDtypesAreNeverConverted) {
  TempDir tmp;
  write_safetensors(tmp.file("i.safetensors"),
                    {make_tensor_data<int32_t>("w", {2}, std::vector<int32_t>{1, 2})});
  write_safetensors(tmp.file("d.safetensors"),
                    {make_tensor_data<double>("w", {2}, std::vector<double>{1, 2})});
  LoadOptions opts;
  opts.convert_floats = true;
  OneInput m(DType::F32, 2);
  ReferenceRuntime rt(m.g);
  expect_error([&] { load_safetensors(rt, tmp.file("i.safetensors"), opts); },
               {"[load_safetensors]", "'w' is i32, graph input is f32"});
  // F64 sources are not converted (narrowing through float would round twice).
  expect_error([&] { load_safetensors(rt, tmp.file("d.safetensors"), opts); },
               {"[load_safetensors]", "'w' is f64, graph input is f32"});
  OneInput i(DType::I32, 2);
  ReferenceRuntime rt2(i.g);
  write_safetensors(tmp.file("f.safetensors"),
                    {make_tensor_data<float>("w", {2}, std::vector<float>{1, 2})});
  expect_error([&] { load_safetensors(rt2, tmp.file("f.safetensors"), opts); },
               {"'w' is f32, graph input is i32"});
}

TEST(LoadConvert, ConvertedWeightsComputeTheRightResult) {
  TempDir tmp;
  const std::vector<float> v{0.5f, 1.25f, -3.0f, 8.0f};  // exact in bf16
  write_safetensors(tmp.file("w.safetensors"), {make_tensor_data<float>("w", {4}, v)});
  Graph g;
  GraphTensor w = g.named_tensor("w", {4}, DType::BF16).persist();
  GraphTensor y = w.cast(DType::F32).sum(0).output();
  ReferenceRuntime rt(g);
  LoadOptions opts;
  opts.convert_floats = true;
  load_safetensors(rt, tmp.file("w.safetensors"), opts);
  rt.execute();
  EXPECT_EQ(rt.get_f32(y), (std::vector<float>{6.75f}));
}

}  // namespace
}  // namespace luminal
