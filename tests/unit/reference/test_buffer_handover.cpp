// ReferenceRuntime buffer hand-over: a Scatter whose destination dies at it, and an Output whose source
// dies at it, take that buffer instead of copying it (KV caches round-tripped through
// remove_buffer / set_buffer are updated in place); values stay those of the copying semantics.
#include <gtest/gtest.h>

#include <vector>

#include "luminal/reference.h"

namespace luminal {
namespace {

using Floats = std::vector<float>;

// The CPU runtime's Buffer holds a std::vector<std::byte> (cpu_runtime.cpp); its data pointer
// shows whether the bytes moved or were copied.
const std::byte* data_of(const Buffer& b) {
  return static_cast<const std::vector<std::byte>*>(b.impl.get())->data();
}

TEST(BufferHandover, ACacheRoundTripIsUpdatedInPlace) {
  Graph g;
  GraphTensor cache = g.named_tensor("cache", {4, 2});
  GraphTensor pos = g.named_tensor("pos", {1}, DType::I32);
  GraphTensor row = g.named_tensor("row", {1, 2});
  GraphTensor next = cache.scatter(pos, row);
  GraphTensor total = next.sum(0).output();  // a reader before the Output: [sum col 0, sum col 1]
  GraphTensor out = next;
  out.output();
  ReferenceRuntime rt(g);
  rt.set_zeros(cache, 8 * sizeof(float));
  const std::byte* first = nullptr;
  for (int32_t step = 0; step < 3; ++step) {
    rt.set_data(pos, std::span<const int32_t>(std::vector<int32_t>{step}));
    rt.set_data(row, std::span<const float>(Floats{float(step + 1), float(10 * (step + 1))}));
    rt.execute();
    Buffer b = rt.remove_buffer(out);
    if (step == 0) first = data_of(b);
    EXPECT_EQ(data_of(b), first) << "the cache was copied at step " << step;
    rt.set_buffer(cache, std::move(b));
  }
  // Rows 0..2 hold (1, 10), (2, 20), (3, 30): column sums 6 and 60.
  EXPECT_EQ(rt.get_f32(total), (Floats{6, 60}));
  EXPECT_EQ(rt.get_f32(cache), (Floats{1, 10, 2, 20, 3, 30, 0, 0}));
}

TEST(BufferHandover, APersistedOrStillReadDestinationIsCopied) {
  // The persisted cache keeps its value; the scatter read after a later reader still sees the old
  // destination through it.
  Graph g;
  GraphTensor cache = g.named_tensor("cache", {2}).persist();
  GraphTensor idx = g.named_tensor("idx", {1}, DType::I32);
  GraphTensor src = g.named_tensor("src", {1});
  GraphTensor a = cache.scatter(idx, src).output();
  GraphTensor b = (cache * 2.0).output();
  ReferenceRuntime rt(g);
  rt.set_data(cache, std::span<const float>(Floats{1, 2}));
  rt.set_data(idx, std::span<const int32_t>(std::vector<int32_t>{1}));
  rt.set_data(src, std::span<const float>(Floats{9}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(a), (Floats{1, 9}));
  EXPECT_EQ(rt.get_f32(b), (Floats{2, 4}));
  EXPECT_EQ(rt.get_f32(cache), (Floats{1, 2}));
}

TEST(BufferHandover, AConsumedInputReadAgainLaterIsNotTaken) {
  Graph g;
  GraphTensor d = g.named_tensor("d", {2});
  GraphTensor idx = g.named_tensor("idx", {1}, DType::I32);
  GraphTensor src = g.named_tensor("src", {1});
  GraphTensor a = d.scatter(idx, src).output();
  GraphTensor b = (d + 1.0).output();  // reads d after the scatter
  ReferenceRuntime rt(g);
  rt.set_data(d, std::span<const float>(Floats{1, 2}));
  rt.set_data(idx, std::span<const int32_t>(std::vector<int32_t>{0}));
  rt.set_data(src, std::span<const float>(Floats{7}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(a), (Floats{7, 2}));
  EXPECT_EQ(rt.get_f32(b), (Floats{2, 3}));
}

}  // namespace
}  // namespace luminal
