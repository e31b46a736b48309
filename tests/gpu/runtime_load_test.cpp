// Checkpoint loading on CUDA: sharded files, float conversion, chunked streaming of large tensors,
// the device-memory check before any allocation, and the progress summary.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "gpu/gpu_test_util.h"
#include "luminal/reference.h"
#include "luminal/cuda.h"
#include "luminal/safetensors.h"
#include "unit/io/io_test_util.h"
#include "luminal/compile.h"

namespace luminal {
namespace {

using gpu_test::CudaTest;
using gpu_test::expect_error;
using test::TempDir;

class CudaLoad : public CudaTest {};

std::vector<std::byte> bf16_bytes(const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * 2);
  for (size_t i = 0; i < v.size(); ++i) {
    const uint16_t b = f32_to_bf16_bits(v[i]);
    std::memcpy(out.data() + 2 * i, &b, 2);
  }
  return out;
}

// y[i] = sum_j w[i, j] * x[j] + b[i], with w and b loaded.
struct Mlp {
  Graph g;
  GraphTensor w, b, x, y;
  Mlp(DType wdt, int64_t out, int64_t in) {
    w = g.named_tensor("w", {out, in}, wdt).persist();
    b = g.named_tensor("b", {out}).persist();
    x = g.named_tensor("x", {in});
    const GraphTensor wf = wdt == DType::F32 ? w : w.cast(DType::F32);
    y = ((wf * x.expand_dim(0, out)).sum(1) + b).output();
  }
};

TEST_F(CudaLoad, ShardedBf16CheckpointIntoF32AndBf16InputsMatchesTheReference) {
  TempDir tmp;
  const int64_t out = 96, in = 80;
  const std::vector<float> w = gpu_test::spread(size_t(out * in), -1, 1, 1);
  const std::vector<float> b = gpu_test::spread(size_t(out), -2, 2, 2);
  const std::vector<float> x = gpu_test::spread(size_t(in), -1, 1, 3);
  write_safetensors(tmp.file("m-1.safetensors"),
                    {TensorData{"w", DType::BF16, {out, in}, bf16_bytes(w)}});
  write_safetensors(tmp.file("m-2.safetensors"), {make_tensor_data<float>("b", {out}, b)});
  std::ofstream(tmp.file("m.safetensors.index.json"))
      << R"({"weight_map": {"w": "m-1.safetensors", "b": "m-2.safetensors"}})";
  LoadOptions opts;
  opts.convert_floats = true;
  for (DType wdt : {DType::F32, DType::BF16, DType::F16}) {
    SCOPED_TRACE(std::string(dtype_name(wdt)));
    Mlp m(wdt, out, in);
    ReferenceRuntime ref(m.g);
    Executable rt(m.g, cuda::backend());
    EXPECT_EQ(load_safetensors(ref, tmp.file("m.safetensors.index.json"), opts), 2u);
    EXPECT_EQ(load_safetensors(rt, tmp.file(""), opts), 2u);  // the directory
    EXPECT_EQ(rt.get_bytes(m.w), ref.get_bytes(m.w));        // the same host conversion
    for (Runtime* r : {static_cast<Runtime*>(&ref), static_cast<Runtime*>(&rt)}) {
      r->set_data(m.x, std::span<const float>(x));
      r->execute();
    }
    gpu_test::expect_all_near(rt.get_f32(m.y), ref.get_f32(m.y), 1e-4, 1e-4, "y");
  }
}

TEST_F(CudaLoad, LargeTensorsStreamInChunksExactly) {
  TempDir tmp;
  // 6M floats = 24 MB: two 16 MiB chunks as f32, one and a half converted to bf16.
  const size_t n = 6'000'000;
  std::vector<float> big(n);
  for (size_t i = 0; i < n; ++i) big[i] = float(i % 1000003) * 0.001f - 500.0f + 1e-4f;
  write_safetensors(tmp.file("big.safetensors"), {make_tensor_data<float>("t", {int64_t(n)}, big)});
  for (DType dt : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(std::string(dtype_name(dt)));
    Graph g;
    GraphTensor t = g.named_tensor("t", {int64_t(n)}, dt).persist();
    (dt == DType::F32 ? t : t.cast(DType::F32)).sum(0).output();
    LoadOptions opts;
    opts.convert_floats = true;
    ReferenceRuntime ref(g);
    Executable rt(g, cuda::backend());
    load_safetensors(ref, tmp.file("big.safetensors"), opts);
    load_safetensors(rt, tmp.file("big.safetensors"), opts);
    EXPECT_TRUE(rt.get_bytes(t) == ref.get_bytes(t));
  }
}

TEST_F(CudaLoad, TooBigForTheLimitIsRefusedBeforeAnythingChanges) {
  TempDir tmp;
  Mlp m(DType::F32, 1024, 1024);  // w: 4 MiB
  const std::vector<float> w = gpu_test::spread(1024 * 1024, -1, 1, 4);
  const std::vector<float> b = gpu_test::spread(1024, -1, 1, 5);
  write_safetensors(tmp.file("m.safetensors"), {make_tensor_data<float>("w", {1024, 1024}, w),
                                                make_tensor_data<float>("b", {1024}, b)});
  Executable rt(m.g, cuda::backend());
  ReferenceRuntime ref(m.g);
  ASSERT_EQ(load_safetensors(ref, tmp.file("m.safetensors")), 2u);
  ASSERT_EQ(load_safetensors(rt, tmp.file("m.safetensors")), 2u);
  // A second load reuses the blocks in place: it needs no new memory, so even a tiny limit passes.
  LoadOptions tiny;
  tiny.device_memory_limit = 1;
  EXPECT_EQ(load_safetensors(rt, tmp.file("m.safetensors"), tiny), 2u);
  // A fresh runtime needs 4 MiB + 4 KiB: refused with both sizes, nothing bound.
  Executable fresh(m.g, cuda::backend());
  LoadOptions limit;
  limit.device_memory_limit = 1 << 20;
  expect_error([&] { load_safetensors(fresh, tmp.file("m.safetensors"), limit); },
               {"[load] model needs 4.0 MiB of device memory",
                "LoadOptions::device_memory_limit is 1.0 MiB"});
  const std::vector<float> x = gpu_test::spread(1024, -1, 1, 6);
  fresh.set_data(m.x, std::span<const float>(x));
  expect_error([&] { fresh.execute(); }, {"has no data"});
  // The loaded runtime still works.
  rt.set_data(m.x, std::span<const float>(x));
  ref.set_data(m.x, std::span<const float>(x));
  rt.execute();
  ref.execute();
  gpu_test::expect_all_near(rt.get_f32(m.y), ref.get_f32(m.y), 1e-3, 1e-4, "y");
}

TEST_F(CudaLoad, ModelLargerThanTheDeviceIsRefusedWithBothSizes) {
  TempDir tmp;
  // A sparse 256 GiB file: more than any current GPU has; nothing is read before the refusal.
  const int64_t n = int64_t{64} << 30;  // f32 elements
  const std::string header = fmt::format(
      R"({{"t": {{"dtype": "F32", "shape": [{}], "data_offsets": [0, {}]}}}})", n, n * 4);
  const std::string path = tmp.file("huge.safetensors");
  test::write_bytes(path, test::st_bytes(header));
  if (::truncate(path.c_str(), off_t(8 + header.size()) + n * 4) != 0)
    GTEST_SKIP() << "no sparse files here";
  Graph g;
  g.named_tensor("t", {n}).persist();  // loaded by name; no kernel of the plan reads it
  GraphTensor s = g.named_tensor("s", {4});
  (s * 2.0).output();
  Executable rt(g, cuda::backend());
  expect_error([&] { load_safetensors(rt, path); },
               {"[load] model needs 256.0 GiB of device memory, the device has", "GiB free"});
}

TEST_F(CudaLoad, ProgressReportsTheDeviceMemoryUsed) {
  TempDir tmp;
  write_safetensors(tmp.file("m.safetensors"),
                    {make_tensor_data<float>("b", {1024}, gpu_test::spread(1024, -1, 1, 7))});
  Mlp m(DType::F32, 1024, 4);
  Executable rt(m.g, cuda::backend());
  LoadOptions opts;
  opts.progress = true;
  ::testing::internal::CaptureStderr();
  load_safetensors(rt, tmp.file("m.safetensors"), opts);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("[load] 1 tensors, 4096 bytes"), std::string::npos) << err;
  EXPECT_NE(err.find("device memory:"), std::string::npos) << err;
  EXPECT_EQ(err.find('\r'), std::string::npos) << "no bar for a small load: " << err;
}

}  // namespace
}  // namespace luminal
