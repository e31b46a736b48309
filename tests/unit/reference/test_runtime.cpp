// CPU reference runtime: execution semantics (consumed inputs, dynamic dims, views, buffers,
// weights). Every expected value is computed by hand in the comments next to it.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <vector>

#include "luminal/reference.h"
#include "luminal/custom_op.h"
#include "luminal/safetensors.h"

namespace luminal {
namespace {

using Floats = std::vector<float>;

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          ("luminal_ref_" + std::to_string(getpid()) + "_" + name))
      .string();
}

std::vector<uint8_t> bytes_u8(const std::vector<std::byte>& b) {
  std::vector<uint8_t> out(b.size());
  std::memcpy(out.data(), b.data(), b.size());
  return out;
}

TEST(ReferenceRuntime, AddsTwoInputs) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {2, 3});
  GraphTensor b = g.named_tensor("b", {2, 3});
  GraphTensor y = (a + b).output();
  ReferenceRuntime rt(g);
  rt.set_data(a, std::span<const float>(Floats{1, 2, 3, 4, 5, 6}));
  rt.set_data(b, std::span<const float>(Floats{10, 20, 30, 40, 50, 60}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(y), (Floats{11, 22, 33, 44, 55, 66}));
}

TEST(ReferenceRuntime, NonPersistedInputIsConsumedPersistedIsKept) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2});
  GraphTensor w = g.named_tensor("w", {2}).persist();
  GraphTensor y = (x * w).output();
  ReferenceRuntime rt(g);
  rt.set_data(x, std::span<const float>(Floats{2, 3}));
  rt.set_data(w, std::span<const float>(Floats{5, 7}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(y), (Floats{10, 21}));
  // x was consumed: executing again without rebinding it fails and names it.
  try {
    rt.execute();
    FAIL() << "expected a missing-input error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x' has no data"), std::string::npos) << e.what();
  }
  // w is still bound.
  rt.set_data(x, std::span<const float>(Floats{-1, 4}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(y), (Floats{-5, 28}));
}

TEST(ReferenceRuntime, OutputReadableUntilNextExecute) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {1});
  GraphTensor y = (x + x).output();
  ReferenceRuntime rt(g);
  rt.set_data(x, std::span<const float>(Floats{4}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(y), (Floats{8}));
  EXPECT_EQ(rt.get_f32(y), (Floats{8}));  // reading does not consume
}

TEST(ReferenceRuntime, DynamicBatchAtSeveralSizes) {
  Graph g;
  const Expr batch = Expr::sym("batch");
  GraphTensor x = g.named_tensor("x", {batch, 3});
  GraphTensor w = g.named_tensor("w", {3}).persist();
  GraphTensor y = (x * w.expand_dim(0, batch)).sum(1).output();
  ReferenceRuntime rt(g);
  rt.set_data(w, std::span<const float>(Floats{1, 2, 3}));
  for (int64_t b : {1, 3, 7}) {
    // x[r, j] = 3r + j, so y[r] = 3r*1 + (3r+1)*2 + (3r+2)*3 = 18r + 8.
    Floats xs;
    for (int i = 0; i < 3 * b; ++i) xs.push_back(static_cast<float>(i));
    rt.set_data(x, std::span<const float>(xs));
    rt.execute({{"batch", b}});
    Floats want;
    for (int r = 0; r < b; ++r) want.push_back(static_cast<float>(18 * r + 8));
    EXPECT_EQ(rt.get_f32(y), want) << "batch " << b;
  }
}

TEST(ReferenceRuntime, PermuteIsAViewAndReadsTransposed) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 3});
  const size_t before = g.size();
  GraphTensor p = x.permute({1, 0});
  EXPECT_EQ(g.size(), before);  // a view adds no node
  GraphTensor y = p.output();
  EXPECT_EQ(g.size(), before + 1);
  ReferenceRuntime rt(g);
  rt.set_data(x, std::span<const float>(Floats{0, 1, 2, 3, 4, 5}));
  rt.execute();
  // x = [[0,1,2],[3,4,5]] -> x^T = [[0,3],[1,4],[2,5]].
  EXPECT_EQ(rt.get_f32(y), (Floats{0, 3, 1, 4, 2, 5}));
}

TEST(ReferenceRuntime, SlicedAndPaddedViews) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 3});
  GraphTensor s = x.slice(1, 1, 3).output();  // columns 1..2
  GraphTensor p = x.pad(1, 1, 2).output();    // one zero column before, two after
  ReferenceRuntime rt(g);
  rt.set_data(x, std::span<const float>(Floats{0, 1, 2, 3, 4, 5}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(s), (Floats{1, 2, 4, 5}));
  EXPECT_EQ(rt.get_f32(p), (Floats{0, 0, 1, 2, 0, 0, 0, 3, 4, 5, 0, 0}));
}

TEST(ReferenceRuntime, BroadcastViewSumsRepeatedRow) {
  Graph g;
  GraphTensor v = g.named_tensor("v", {3});
  GraphTensor y = v.expand_dim(0, 4).sum(0).output();  // each element summed 4 times
  ReferenceRuntime rt(g);
  rt.set_data(v, std::span<const float>(Floats{1, -2, 0.5f}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(y), (Floats{4, -8, 2}));
}

TEST(ReferenceRuntime, KvCacheRoundTripThroughRemoveAndSetBuffer) {
  Graph g;
  GraphTensor cache = g.named_tensor("cache", {4, 2});
  GraphTensor idx = g.named_tensor("idx", {1}, DType::I32);
  GraphTensor row = g.named_tensor("row", {1, 2});
  GraphTensor next = cache.scatter(idx, row).output();
  ReferenceRuntime rt(g);

  rt.set_zeros(cache, 4 * 2 * sizeof(float));
  rt.set_data(idx, std::span<const int32_t>(std::vector<int32_t>{0}));
  rt.set_data(row, std::span<const float>(Floats{1, 2}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(next), (Floats{1, 2, 0, 0, 0, 0, 0, 0}));

  Buffer b = rt.remove_buffer(next);
  EXPECT_EQ(b.bytes, 8 * sizeof(float));
  EXPECT_EQ(b.dtype, DType::F32);
  EXPECT_THROW(rt.get_f32(next), std::runtime_error);  // moved out
  rt.set_buffer(cache, std::move(b));
  rt.set_data(idx, std::span<const int32_t>(std::vector<int32_t>{2}));
  rt.set_data(row, std::span<const float>(Floats{3, 4}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(next), (Floats{1, 2, 0, 0, 3, 4, 0, 0}));
}

TEST(ReferenceRuntime, RemoveBufferOfInputUnbindsIt) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2}).persist();
  GraphTensor y = (x + x).output();
  ReferenceRuntime rt(g);
  rt.set_data(x, std::span<const float>(Floats{1, 2}));
  Buffer b = rt.remove_buffer(x);
  ASSERT_TRUE(b);
  EXPECT_THROW(rt.execute(), std::runtime_error);
  rt.set_buffer(x, b);
  rt.execute();
  EXPECT_EQ(rt.get_f32(y), (Floats{2, 4}));
}

TEST(ReferenceRuntime, SetZeros) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 2});
  GraphTensor y = (x + g.constant(1.5).expand_dim(0, 2).expand_dim(0, 2)).output();
  ReferenceRuntime rt(g);
  rt.set_zeros(x, 4 * sizeof(float));
  rt.execute();
  EXPECT_EQ(rt.get_f32(y), (Floats{1.5f, 1.5f, 1.5f, 1.5f}));
}

TEST(ReferenceRuntime, LoadSafetensorsBindsMatchingInputsAsPersisted) {
  Graph g;
  GraphTensor w = g.named_tensor("layer.weight", {2, 2});
  GraphTensor x = g.named_tensor("x", {2, 2});
  GraphTensor y = (x * w).output();
  const std::string path = temp_path("weights.safetensors");
  const Floats wv{1, 2, 3, 4}, other{9};
  write_safetensors(path, {make_tensor_data<float>("layer.weight", {2, 2}, wv),
                           make_tensor_data<float>("unused", {1}, other)});
  ReferenceRuntime rt(g);
  EXPECT_EQ(load_safetensors(rt, path), 1u);
  for (float s : {1.0f, 2.0f}) {  // the weight survives both executes
    rt.set_data(x, std::span<const float>(Floats{s, s, s, s}));
    rt.execute();
    EXPECT_EQ(rt.get_f32(y), (Floats{s * 1, s * 2, s * 3, s * 4}));
  }
  std::filesystem::remove(path);
}

TEST(ReferenceRuntime, HostOpsSummarizesThePlan) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {2});
  GraphTensor b = g.named_tensor("b", {2});
  (a + b).output();
  (a * b + a).output();
  ReferenceRuntime rt(g);
  EXPECT_EQ(rt.host_ops(), (std::vector<std::string>{"cpu:Output x2", "cpu:Add x2", "cpu:Mul x1"}));
}

TEST(ReferenceRuntime, UnneededNodesDoNotRun) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {2});
  GraphTensor idx = g.named_tensor("idx", {1}, DType::I32);
  (void)a.gather(idx);  // never marked output: must not run (its index input is never set)
  GraphTensor y = (a + a).output();
  ReferenceRuntime rt(g);
  rt.set_data(a, std::span<const float>(Floats{1, 2}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(y), (Floats{2, 4}));
}

TEST(CpuRuntimeKernels, CastTruncatesTowardZeroAndRoundsHalfToEven) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4});
  GraphTensor i = x.cast(DType::I32).output();
  GraphTensor h = x.cast(DType::F16).output();
  ReferenceRuntime rt(g);
  // 1 + 2^-11 is halfway between f16 1.0 and 1 + 2^-10: ties to even -> 1.0.
  // 1 + 3*2^-11 is halfway between 1 + 2^-10 and 1 + 2^-9: ties to even -> 1 + 2^-9.
  const float t1 = 1.0f + std::ldexp(1.0f, -11), t2 = 1.0f + 3 * std::ldexp(1.0f, -11);
  rt.set_data(x, std::span<const float>(Floats{-1.7f, 2.9f, t1, t2}));
  rt.execute();
  EXPECT_EQ(rt.get_i32(i), (std::vector<int32_t>{-1, 2, 1, 1}));
  EXPECT_EQ(rt.get_f32(h),
            (Floats{-1.7001953125f, 2.900390625f, 1.0f, 1.0f + std::ldexp(1.0f, -9)}));
}

TEST(CpuRuntimeKernels, ModFollowsTorchFmodAndCRemainder) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {2});
  GraphTensor b = g.named_tensor("b", {2});
  GraphTensor ia = g.named_tensor("ia", {2}, DType::I32);
  GraphTensor ib = g.named_tensor("ib", {2}, DType::I32);
  GraphTensor f = (a % b).output();
  GraphTensor i = (ia % ib).output();
  ReferenceRuntime rt(g);
  rt.set_data(a, std::span<const float>(Floats{-7, 7.5f}));
  rt.set_data(b, std::span<const float>(Floats{3, 2}));
  rt.set_data(ia, std::span<const int32_t>(std::vector<int32_t>{-7, 7}));
  rt.set_data(ib, std::span<const int32_t>(std::vector<int32_t>{3, -3}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(f), (Floats{-1, 1.5f}));             // fmod: sign of the dividend
  EXPECT_EQ(rt.get_i32(i), (std::vector<int32_t>{-1, 1}));  // C %: truncated division
}

TEST(CpuRuntimeKernels, LessThanYieldsBoolBytes) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {3});
  GraphTensor b = g.named_tensor("b", {3});
  GraphTensor y = a.lt(b).output();
  ReferenceRuntime rt(g);
  rt.set_data(a, std::span<const float>(Floats{1, 2, 3}));
  rt.set_data(b, std::span<const float>(Floats{2, 2, 2}));
  rt.execute();
  EXPECT_EQ(bytes_u8(rt.get_bytes(y)), (std::vector<uint8_t>{1, 0, 0}));
}

TEST(CpuRuntimeKernels, MaxReduceAndGatherAndArange) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {2, 3});
  GraphTensor idx = g.named_tensor("idx", {3}, DType::I64);
  GraphTensor m = x.max(1).output();
  GraphTensor rows = x.gather(idx).output();
  GraphTensor ar = g.arange(4).output();
  ReferenceRuntime rt(g);
  rt.set_data(x, std::span<const float>(Floats{3, -1, 2, -5, -4, -6}));
  rt.set_data(idx, std::span<const int64_t>(std::vector<int64_t>{1, 0, 1}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(m), (Floats{3, -4}));
  EXPECT_EQ(rt.get_f32(rows), (Floats{-5, -4, -6, 3, -1, 2, -5, -4, -6}));
  EXPECT_EQ(rt.get_i32(ar), (std::vector<int32_t>{0, 1, 2, 3}));
}

// out = a + 2 * b, through the decomposition.
struct AddTwice : CustomOp {
  std::string name() const override { return "add_twice"; }
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& in) const override {
    (void)g;
    return in[0] + in[1] * 2.0;
  }
};

TEST(CpuRuntimeKernels, CustomRunsItsDecompositionAtEachBatch) {
  Graph g;
  const Expr n = Expr::sym("n");
  GraphTensor a = g.named_tensor("a", {n});
  GraphTensor b = g.named_tensor("b", {n});
  GraphTensor y = custom_op(std::make_shared<AddTwice>(), {a, b}).output();
  ReferenceRuntime rt(g);
  rt.set_data(a, std::span<const float>(Floats{1, 2}));
  rt.set_data(b, std::span<const float>(Floats{10, 20}));
  rt.execute({{"n", 2}});
  EXPECT_EQ(rt.get_f32(y), (Floats{21, 42}));
  rt.set_data(a, std::span<const float>(Floats{1, 1, 1}));
  rt.set_data(b, std::span<const float>(Floats{0, 1, -1}));
  rt.execute({{"n", 3}});
  EXPECT_EQ(rt.get_f32(y), (Floats{1, 3, -1}));
}

TEST(CpuRuntimeKernels, CustomReadsAPermutedInputView) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {2, 2});
  GraphTensor b = g.named_tensor("b", {2, 2});
  GraphTensor y = custom_op(std::make_shared<AddTwice>(), {a.permute({1, 0}), b}).output();
  ReferenceRuntime rt(g);
  rt.set_data(a, std::span<const float>(Floats{1, 2, 3, 4}));  // a^T = [1, 3, 2, 4]
  rt.set_data(b, std::span<const float>(Floats{0, 0, 1, 1}));
  rt.execute();
  EXPECT_EQ(rt.get_f32(y), (Floats{1, 3, 4, 6}));
}

}  // namespace
}  // namespace luminal
