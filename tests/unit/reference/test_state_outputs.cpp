// States (GraphTensor::output_into): an Output that becomes an Input's next value after each
// execute. The input is persisted, a Scatter into it is done in place (its buffer never changes),
// any other next value is moved in; get_* refuses the state Output; misuse is named.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "luminal/reference.h"
#include "unit/core/core_test_util.h"

namespace luminal {
namespace {

using Floats = std::vector<float>;

const std::byte* data_of(const Buffer& b) {
  return static_cast<const std::vector<std::byte>*>(b.impl.get())->data();
}

// Reads an input's data by moving its buffer out and back (a state stays bound).
Floats read_state(ReferenceRuntime& rt, const GraphTensor& in, const std::byte** data = nullptr) {
  Buffer b = rt.remove_buffer(in);
  const auto* bytes = static_cast<const std::vector<std::byte>*>(b.impl.get());
  Floats v(bytes->size() / sizeof(float));
  std::memcpy(v.data(), bytes->data(), bytes->size());
  if (data) *data = data_of(b);
  rt.set_buffer(in, std::move(b));
  return v;
}

TEST(StateOutputs, AScatterCacheIsWrittenInPlaceAcrossSteps) {
  Graph g;
  GraphTensor cache = g.named_tensor("cache", {4, 2});
  GraphTensor pos = g.named_tensor("pos", {1}, DType::I32);
  GraphTensor row = g.named_tensor("row", {1, 2});
  GraphTensor next = cache.scatter(pos, row);
  GraphTensor total = next.sum(0).output();  // read of the new value in the same step
  next.output_into(cache);
  EXPECT_TRUE(cache.node().persist);
  ReferenceRuntime rt(g);
  rt.set_zeros(cache, 8 * sizeof(float));
  const std::byte* first = nullptr;
  for (int32_t step = 0; step < 3; ++step) {
    rt.set_data(pos, std::span<const int32_t>(std::vector<int32_t>{step}));
    rt.set_data(row, std::span<const float>(Floats{float(step + 1), float(10 * (step + 1))}));
    rt.execute();
    const float s = float((step + 1) * (step + 2) / 2);
    EXPECT_EQ(rt.get_f32(total), (Floats{s, 10 * s})) << "step " << step;
    const std::byte* now = nullptr;
    read_state(rt, cache, &now);
    if (step == 0) first = now;
    EXPECT_EQ(now, first) << "the cache was copied at step " << step;
  }
  EXPECT_EQ(read_state(rt, cache), (Floats{1, 10, 2, 20, 3, 30, 0, 0}));
}

TEST(StateOutputs, AnyNextValueReplacesTheInputAfterTheStep) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {3});
  GraphTensor seen = (x * 1.0).output();  // reads the value before the update
  GraphTensor next = x + 1.0;
  next.output_into(x);
  ReferenceRuntime rt(g);
  rt.set_data(x, std::span<const float>(Floats{1, 2, 3}));
  for (int i = 0; i < 3; ++i) {
    rt.execute();
    EXPECT_EQ(rt.get_f32(seen), (Floats{1.0f + i, 2.0f + i, 3.0f + i}));
  }
  EXPECT_EQ(read_state(rt, x), (Floats{4, 5, 6}));
  expect_error([&] { rt.get_f32(next); }, "is the next value of input 'x' (output_into): read that input");
}

// As documented on output_into: a throw after the scatter took the state's buffer leaves the
// input without data, and the next execute names it (nothing half-updated is used silently).
TEST(StateOutputs, AFailedStepLeavesTheStateToBeSetAgain) {
  Graph g;
  GraphTensor cache = g.named_tensor("cache", {4, 2});
  GraphTensor pos = g.named_tensor("pos", {1}, DType::I32);
  GraphTensor row = g.named_tensor("row", {1, 2});
  GraphTensor table = g.named_tensor("table", {3, 2});
  GraphTensor idx = g.named_tensor("idx", {1}, DType::I32);
  GraphTensor next = cache.scatter(pos, row);
  (table.gather(idx) + next.slice(0, 0, 1)).output();  // runs after the scatter
  next.output_into(cache);
  ReferenceRuntime rt(g);
  rt.set_zeros(cache, 8 * sizeof(float));
  rt.set_data(table, std::span<const float>(Floats{1, 2, 3, 4, 5, 6}));
  auto feed = [&](int32_t i) {
    rt.set_data(pos, std::span<const int32_t>(std::vector<int32_t>{0}));
    rt.set_data(row, std::span<const float>(Floats{7, 8}));
    rt.set_data(idx, std::span<const int32_t>(std::vector<int32_t>{i}));
  };
  feed(5);  // out of range: the gather throws
  expect_error([&] { rt.execute(); }, "[gather] index 5 out of range [0, 3)");
  feed(1);
  expect_error([&] { rt.execute(); }, "input 'cache' has no data");
  rt.set_zeros(cache, 8 * sizeof(float));
  feed(1);
  rt.execute();
  EXPECT_EQ(read_state(rt, cache), (Floats{7, 8, 0, 0, 0, 0, 0, 0}));
}

TEST(StateOutputs, MisuseIsNamed) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {3});
  GraphTensor y = g.named_tensor("y", {2});
  GraphTensor h = g.named_tensor("h", {3}, DType::BF16);
  expect_error([&] { (x + 1.0).output_into(y); }, "input 'y' is f32 [2], the value is f32 [3]");
  expect_error([&] { (x + 1.0).output_into(h); }, "input 'h' is bf16 [3]");
  expect_error([&] { (x * 2.0).output_into(x + 1.0); }, "state must be a whole Input tensor");
  (x * 2.0).output_into(x);
  expect_error([&] { (x * 3.0).output_into(x); }, "input 'x' already has a next value");
}

}  // namespace
}  // namespace luminal
