// CPU reference runtime: every misuse gets a clear, tagged error naming the
// tensor/dtype/shape/file.
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "luminal/reference.h"
#include "expect_error.h"
#include "luminal/safetensors.h"

namespace luminal {
namespace {

using Floats = std::vector<float>;

using test::expect_error;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("luminal_referr_" + std::to_string(getpid()) + "_" + name))
      .string();
}

TEST(CpuRuntimeErrors, SetDataOnANonInput) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2});
  GraphTensor y = x + x;
  ReferenceRuntime rt(g);
  expect_error(
      [&] {
        rt.set_data(y, std::span<const float>(Floats{1, 2}));
      },
      {"[set_data]", "Add", "is not an Input"});
}

TEST(CpuRuntimeErrors, TensorFromAnotherGraph) {
  Graph g, other;
  GraphTensor x = other.named_tensor("x", {2});
  g.named_tensor("x", {2});
  ReferenceRuntime rt(g);
  expect_error(
      [&] {
        rt.set_data(x, std::span<const float>(Floats{1, 2}));
      },
      {"[set_data]", "graph"});
}

TEST(CpuRuntimeErrors, SetDataOnAViewOfAnInput) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 3});
  ReferenceRuntime rt(g);
  expect_error(
      [&] {
        rt.set_data(x.permute({1, 0}), std::span<const float>(Floats(6, 0)));
      },
      {"[set_data]", "view of input 'x'"});
}

TEST(CpuRuntimeErrors, ReadingANonOutput) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2});
  GraphTensor y = x * x;
  y.output();  // y now names the Output; use the Mul itself below
  GraphTensor mul(&g, g.node(y.id).inputs[0].node);
  ReferenceRuntime rt(g);
  expect_error([&] { rt.get_f32(mul); },
               {"[get_f32]", "Mul", "is not an output; call .output() on it"});
}

TEST(CpuRuntimeErrors, ReadingAnOutputBeforeExecute) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2});
  GraphTensor y = (x + x).output();
  ReferenceRuntime rt(g);
  expect_error([&] { rt.get_f32(y); }, {"[get]", fmt::format("output (node {})", y.id),
                                        "has not been computed; call execute() first"});
}

TEST(CpuRuntimeErrors, WrongDtypeSetData) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2});
  ReferenceRuntime rt(g);
  expect_error(
      [&] {
        rt.set_data(x, std::span<const int32_t>(std::vector<int32_t>{1, 2}));
      },
      {"[set_data] tensor 'x' is f32, got i32 data"});
}

TEST(CpuRuntimeErrors, WrongElementCountForStaticShape) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 3});
  ReferenceRuntime rt(g);
  expect_error(
      [&] {
        rt.set_data(x, std::span<const float>(Floats{1, 2, 3, 4, 5}));
      },
      {"[set_data]", "'x'", "[2, 3]", "6 elements", "got 5"});
}

TEST(CpuRuntimeErrors, WrongByteCountForDynamicShape) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {Expr::sym("batch"), 3});
  (x + x).output();
  ReferenceRuntime rt(g);
  rt.set_data(x, std::span<const float>(Floats(10, 1.0f)));
  expect_error(
      [&] {
        rt.execute({{"batch", 4}});
      },
      {"[execute] input 'x' has 40 bytes, shape [batch=4, 3] f32 needs 48"});
}

TEST(CpuRuntimeErrors, MissingInputData) {
  Graph g;
  GraphTensor x = g.named_tensor("dense_x", {2});
  (x + x).output();
  ReferenceRuntime rt(g);
  expect_error([&] { rt.execute(); }, {"[execute] input 'dense_x' has no data"});
}

TEST(CpuRuntimeErrors, UnboundSymbol) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {Expr::sym("batch")});
  (x + x).output();
  ReferenceRuntime rt(g);
  rt.set_data(x, std::span<const float>(Floats{1, 2}));
  expect_error([&] { rt.execute(); }, {"[execute]", "batch"});
}

TEST(CpuRuntimeErrors, GatherIndexOutOfRangeNamesTheInput) {
  Graph g;
  GraphTensor table = g.named_tensor("table", {10, 2});
  GraphTensor idx = g.named_tensor("indices_0", {2}, DType::I32);
  GraphTensor y = table.gather(idx).output();
  const NodeId gather_id = g.node(y.id).inputs[0].node;
  ReferenceRuntime rt(g);
  rt.set_zeros(table, 10 * 2 * sizeof(float));
  rt.set_data(idx, std::span<const int32_t>(std::vector<int32_t>{3, 12}));
  expect_error(
      [&] { rt.execute(); },
      {fmt::format("[gather] index 12 out of range [0, 10) (node {} reading input 'indices_0')",
                   gather_id)});
  // A failed execute leaves no stale result and keeps the bound inputs: fix the index, retry.
  expect_error([&] { rt.get_f32(y); }, {"has not been computed"});
  rt.set_data(idx, std::span<const int32_t>(std::vector<int32_t>{3, -1}));
  expect_error([&] { rt.execute(); }, {"[gather] index -1 out of range [0, 10)"});
}

TEST(CpuRuntimeErrors, ScatterIndexOutOfRange) {
  Graph g;
  GraphTensor dest = g.named_tensor("dest", {3, 2});
  GraphTensor idx = g.named_tensor("pos", {1}, DType::I64);
  GraphTensor src = g.named_tensor("src", {1, 2});
  dest.scatter(idx, src).output();
  ReferenceRuntime rt(g);
  rt.set_zeros(dest, 6 * sizeof(float));
  rt.set_data(idx, std::span<const int64_t>(std::vector<int64_t>{3}));
  rt.set_data(src, std::span<const float>(Floats{1, 2}));
  expect_error([&] { rt.execute(); }, {"[scatter] index 3 out of range [0, 3)", "input 'pos'"});
}

TEST(CpuRuntimeErrors, IntegerModuloByZero) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {2}, DType::I64);
  GraphTensor b = g.named_tensor("b", {2}, DType::I64);
  (a % b).output();
  ReferenceRuntime rt(g);
  rt.set_data(a, std::span<const int64_t>(std::vector<int64_t>{5, 6}));
  rt.set_data(b, std::span<const int64_t>(std::vector<int64_t>{2, 0}));
  expect_error([&] { rt.execute(); }, {"[mod] integer modulo by zero"});
}

TEST(CpuRuntimeErrors, MaxOverAnEmptyAxis) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, Expr::sym("n")});
  x.max(1).output();
  ReferenceRuntime rt(g);
  rt.set_data(x, std::span<const float>(Floats{}));
  expect_error([&] { rt.execute({{"n", 0}}); }, {"[max_reduce]", "empty axis"});
}

TEST(CpuRuntimeErrors, GetWithTheWrongReader) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {1}, DType::I32);
  GraphTensor y = (x + x).output();
  GraphTensor f = g.named_tensor("f", {1});
  GraphTensor z = (f + f).output();
  ReferenceRuntime rt(g);
  rt.set_data(x, std::span<const int32_t>(std::vector<int32_t>{1}));
  rt.set_data(f, std::span<const float>(Floats{1}));
  rt.execute();
  expect_error([&] { rt.get_f32(y); }, {"[get_f32]", "is i32"});
  expect_error([&] { rt.get_i32(z); }, {"[get_i32]", "is f32"});
  expect_error([&] { rt.get_i64(y); }, {"[get_i64]", "is i32"});
}

TEST(CpuRuntimeErrors, SetDevicePtrIsNotSupported) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {1});
  ReferenceRuntime rt(g);
  float v = 0;
  expect_error([&] { rt.set_device_ptr(x, &v, sizeof(v)); },
               {"[set_device_ptr] not supported by this runtime"});
}

TEST(CpuRuntimeErrors, BufferMisuse) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2});
  GraphTensor k = g.named_tensor("k", {2}, DType::I32);
  GraphTensor y = (x + x).output();
  ReferenceRuntime rt(g);
  expect_error([&] { rt.remove_buffer(x); }, {"[remove_buffer]", "'x'", "no buffer"});
  rt.set_data(k, std::span<const int32_t>(std::vector<int32_t>{1, 2}));
  Buffer b = rt.remove_buffer(k);
  expect_error([&] { rt.set_buffer(x, b); }, {"[set_buffer] tensor 'x' is f32, buffer is i32"});
  expect_error([&] { rt.set_buffer(x, Buffer{}); }, {"[set_buffer]", "empty"});
  // A buffer made elsewhere (e.g. by another backend) is refused, not misread.
  Buffer foreign;
  foreign.impl = std::make_shared<std::vector<float>>(2, 1.0f);
  foreign.bytes = 8;
  expect_error([&] { rt.set_buffer(x, foreign); }, {"[set_buffer]", "'x'", "not a CPU runtime buffer"});
  (void)y;
}

// ---- load_safetensors ----

struct LoadFixture : ::testing::Test {
  Graph g;
  GraphTensor w = g.named_tensor("bot_l.0.weight", {4, 3}).persist();
  GraphTensor b = g.named_tensor("bot_l.0.bias", {4}).persist();
  GraphTensor y = (w.sum(1) + b).output();
  std::string path = temp_path(::testing::UnitTest::GetInstance()->current_test_info()->name());
  void TearDown() override { std::filesystem::remove(path); }
};

TEST_F(LoadFixture, DtypeMismatch) {
  TensorData t{"bot_l.0.weight", DType::F16, {4, 3}, std::vector<std::byte>(12 * 2)};
  write_safetensors(path, {t});
  ReferenceRuntime rt(g);
  expect_error([&] { load_safetensors(rt, path); },
               {"[load_safetensors]", path, "tensor 'bot_l.0.weight' is f16, graph input is f32"});
}

TEST_F(LoadFixture, ShapeMismatch) {
  write_safetensors(path, {make_tensor_data<float>("bot_l.0.weight", {3, 4}, Floats(12, 0))});
  ReferenceRuntime rt(g);
  expect_error([&] { load_safetensors(rt, path); },
               {"[load_safetensors]", path, "'bot_l.0.weight'", "shape [3, 4] vs graph [4, 3]"});
}

TEST_F(LoadFixture, MismatchLoadsNothing) {
  // The bias matches and comes first in the file; the weight is wrong, so neither may be bound.
  write_safetensors(path, {make_tensor_data<float>("bot_l.0.bias", {4}, Floats{1, 2, 3, 4}),
                           make_tensor_data<float>("bot_l.0.weight", {4, 4}, Floats(16, 0))});
  ReferenceRuntime rt(g);
  expect_error([&] { load_safetensors(rt, path); }, {"shape [4, 4] vs graph [4, 3]"});
  rt.set_zeros(w, 12 * sizeof(float));
  expect_error([&] { rt.execute(); }, {"input 'bot_l.0.bias' has no data"});
}

TEST_F(LoadFixture, AllMatchAndResultIsRight) {
  Floats wv(12);
  for (int i = 0; i < 12; ++i) wv[i] = static_cast<float>(i);
  write_safetensors(path, {make_tensor_data<float>("bot_l.0.weight", {4, 3}, wv),
                           make_tensor_data<float>("bot_l.0.bias", {4}, Floats{1, 1, 1, 1})});
  ReferenceRuntime rt(g);
  EXPECT_EQ(load_safetensors(rt, path), 2u);
  rt.execute();
  // Row sums of [[0,1,2],[3,4,5],[6,7,8],[9,10,11]] are 3, 12, 21, 30; plus 1.
  EXPECT_EQ(rt.get_f32(y), (Floats{4, 13, 22, 31}));
}

TEST(CpuRuntimeErrors, LoadIntoASymbolicInputNamesTheDim) {
  Graph g;
  g.named_tensor("emb", {Expr::sym("vocab"), 2});
  ReferenceRuntime rt(g);
  const std::string path = temp_path("symbolic.safetensors");
  write_safetensors(path, {make_tensor_data<float>("emb", {3, 2}, Floats(6, 0))});
  expect_error([&] { load_safetensors(rt, path); },
               {"[load_safetensors]", "'emb'", "symbolic dim 'vocab'"});
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace luminal
