// Binding data to the CUDA runtime: device pointers, buffer moves, consumed inputs, bad input.
#include <gtest/gtest.h>

#include "cuda/runtime/device_memory.h"
#include "gpu/gpu_test_util.h"
#include "luminal/reference.h"
#include "luminal/cuda.h"
#include "luminal/compile.h"

namespace luminal {
namespace {

using cuda::DeviceMemory;
using gpu_test::CudaTest;
using gpu_test::expect_error;

class CudaBinding : public CudaTest {};

std::vector<float> affine(const std::vector<float>& x, float a, float b) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = a * x[i] + b;
  return y;
}

TEST_F(CudaBinding, RebindingDevicePointersFollowsTheData) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {8});
  GraphTensor y = (x * 3.0 + 1.0).output();
  Executable rt(g, cuda::backend());
  const std::vector<float> a = gpu_test::spread(8, -2, 2, 1), b = gpu_test::spread(8, -5, 5, 2);
  DeviceMemory ma(32), mb(32);
  ma.upload(a.data(), 32);
  mb.upload(b.data(), 32);

  rt.set_device_ptr(x, ma.get(), 32);
  rt.execute();
  gpu_test::expect_all_near(rt.get_f32(y), affine(a, 3, 1), 1e-6, 1e-6, "bound to A");
  rt.set_device_ptr(x, mb.get(), 32);
  rt.execute();
  gpu_test::expect_all_near(rt.get_f32(y), affine(b, 3, 1), 1e-6, 1e-6, "rebound to B");
  rt.set_device_ptr(x, mb.get(), 32);  // same pointer again: a no-op
  rt.execute();
  gpu_test::expect_all_near(rt.get_f32(y), affine(b, 3, 1), 1e-6, 1e-6, "B re-registered");
  // New contents behind the same pointer, no re-registration (get_f32 above synchronized).
  const std::vector<float> b2 = gpu_test::spread(8, 1, 9, 3);
  mb.upload(b2.data(), 32);
  rt.execute();  // external pointers are never consumed
  gpu_test::expect_all_near(rt.get_f32(y), affine(b2, 3, 1), 1e-6, 1e-6, "B's new contents");
  rt.set_device_ptr(x, ma.get(), 32);
  rt.execute();
  gpu_test::expect_all_near(rt.get_f32(y), affine(a, 3, 1), 1e-6, 1e-6, "back to A");
  // And back to owned data.
  rt.set_data(x, std::span<const float>(b));
  rt.execute();
  gpu_test::expect_all_near(rt.get_f32(y), affine(b, 3, 1), 1e-6, 1e-6, "owned data");
}

TEST_F(CudaBinding, DevicePointerChecks) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {8});
  (x * 2.0).output();
  Executable rt(g, cuda::backend());
  std::vector<float> host(8, 1.0f);
  expect_error([&] { rt.set_device_ptr(x, host.data(), 32); },
                    {"[set_device_ptr]", "'x'", "not CUDA device memory"});
  expect_error([&] { rt.set_device_ptr(x, nullptr, 32); }, {"[set_device_ptr]", "null"});
  DeviceMemory small(16);  // 16 of the 32 bytes x needs
  expect_error([&] { rt.set_device_ptr(x, small.get(), 32); },
                    {"[set_device_ptr]", "overrun"});
  DeviceMemory block(64);  // a pointer into the middle of an allocation is fine when it fits
  EXPECT_NO_THROW(rt.set_device_ptr(x, static_cast<char*>(block.get()) + 32, 32));
  expect_error([&] { rt.set_device_ptr(x, static_cast<char*>(block.get()) + 36, 32); },
                    {"overrun"});
  DeviceMemory m(32);
  expect_error([&] { rt.set_device_ptr(x, m.get(), 28); }, {"[set_device_ptr]", "8 elements"});
}

TEST_F(CudaBinding, OwnedInputsAreConsumedPersistedOnesStay) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4});
  GraphTensor w = g.named_tensor("w", {4}).persist();
  GraphTensor y = (x * w).output();
  Executable rt(g, cuda::backend());
  const std::vector<float> xs = {1, 2, 3, 4}, ws = {0.5f, -1, 2, 4};
  rt.set_data(x, std::span<const float>(xs));
  rt.set_data(w, std::span<const float>(ws));
  rt.execute();
  gpu_test::expect_all_near(rt.get_f32(y), {0.5f, -2, 6, 16}, 0, 0, "first");
  expect_error([&] { rt.execute(); }, {"[execute]", "input 'x' has no data"});
  expect_error([&] { rt.get_f32(x); }, {"[get]", "'x'", "no data"});
  const std::vector<float> x2 = {-1, -2, -3, -4};
  rt.set_data(x, std::span<const float>(x2));  // w persisted: only x needs data again
  rt.execute();
  gpu_test::expect_all_near(rt.get_f32(y), {-0.5f, 2, -6, -16}, 0, 0, "second");
  gpu_test::expect_all_near(rt.get_f32(w), ws, 0, 0, "persisted input reads back");
}

TEST_F(CudaBinding, RemoveAndSetBufferRoundTrip) {
  // A KV-cache-like loop: the output becomes the next input without leaving the device.
  Graph g;
  GraphTensor cache = g.named_tensor("cache", {4});
  GraphTensor next = (cache + 1.0).output();
  Executable rt(g, cuda::backend());
  const std::vector<float> c0 = {1.5f, 2, 3, 4};
  rt.set_data(cache, std::span<const float>(c0));
  rt.execute();
  for (int step = 1; step <= 4; ++step) {
    Buffer b = rt.remove_buffer(next);
    EXPECT_EQ(b.bytes, 16u);
    EXPECT_EQ(b.dtype, DType::F32);
    expect_error([&] { rt.get_f32(next); }, {"[get]", "not been computed"});
    rt.set_buffer(cache, std::move(b));
    rt.execute();
    gpu_test::expect_all_near(rt.get_f32(next), affine(c0, 1, float(step + 1)), 0, 0, "step");
  }
  // An input's buffer moves out too, and back in.
  rt.set_data(cache, std::span<const float>(c0));
  Buffer in = rt.remove_buffer(cache);
  expect_error([&] { rt.execute(); }, {"[execute]", "'cache' has no data"});
  rt.set_buffer(cache, std::move(in));
  rt.execute();
  gpu_test::expect_all_near(rt.get_f32(next), affine(c0, 1, 1), 0, 0, "input moved back");
}

TEST_F(CudaBinding, BuffersMoveBetweenRuntimesAndOutliveThem) {
  Graph g1;
  GraphTensor a = g1.named_tensor("a", {6});
  GraphTensor a2 = (a * 2.0).output();
  Graph g2;
  GraphTensor b = g2.named_tensor("b", {6});
  GraphTensor b3 = (b + 3.0).output();
  const std::vector<float> av = gpu_test::spread(6, -1, 1);
  Buffer moved;
  {
    Executable r1(g1, cuda::backend());
    r1.set_data(a, std::span<const float>(av));
    r1.execute();
    moved = r1.remove_buffer(a2);
  }  // r1 is gone; its output buffer lives on
  Executable r2(g2, cuda::backend());
  r2.set_buffer(b, std::move(moved));
  r2.execute();
  gpu_test::expect_all_near(r2.get_f32(b3), affine(av, 2, 3), 1e-6, 1e-6, "moved buffer");
}

TEST_F(CudaBinding, SetBufferChecks) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {4});
  GraphTensor i = g.named_tensor("i", {4}, DType::I32);
  GraphTensor y = (x * 2.0).output();
  (i + i).output();
  Executable rt(g, cuda::backend());
  ReferenceRuntime cpu(g);
  const std::vector<float> xs = {1, 2, 3, 4};
  cpu.set_data(x, std::span<const float>(xs));
  expect_error([&] { rt.set_buffer(x, cpu.remove_buffer(x)); },
                    {"[set_buffer]", "not a CUDA runtime buffer"});
  rt.set_data(x, std::span<const float>(xs));
  const std::vector<int32_t> is = {1, 2, 3, 4};
  rt.set_data(i, std::span<const int32_t>(is));
  rt.execute();
  Buffer fb = rt.remove_buffer(y);
  expect_error([&] { rt.set_buffer(i, fb); }, {"[set_buffer]", "i32", "f32"});
  expect_error([&] { rt.set_buffer(x, Buffer{}); }, {"[set_buffer]", "empty"});
}

TEST_F(CudaBinding, ReadingBeforeExecuteAndWrongSizes) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {Expr::sym("batch"), 4});
  GraphTensor y = (x * 2.0).output();
  Executable rt(g, cuda::backend());
  expect_error([&] { rt.get_f32(y); }, {"[get]", "not been computed"});
  const std::vector<float> xs = gpu_test::spread(12, -1, 1);  // 3 rows
  rt.set_data(x, std::span<const float>(xs));
  expect_error([&] { rt.execute({{"batch", 4}}); }, {"[execute]", "input 'x' has 48 bytes"});
  rt.set_data(x, std::span<const float>(xs));
  expect_error([&] { rt.execute(); }, {"[execute]", "batch"});
  rt.set_data(x, std::span<const float>(xs));
  rt.execute({{"batch", 3}});  // and the runtime still works after those errors
  gpu_test::expect_all_near(rt.get_f32(y), affine(xs, 2, 0), 0, 0, "after errors");
}

}  // namespace
}  // namespace luminal
