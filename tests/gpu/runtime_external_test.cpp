// The caller's memory and streams: outputs written into external device memory
// (set_output_ptr), work run on another stream (set_stream), and the same through
// CompiledProgram, as the Python package uses them.
#include <gtest/gtest.h>

#include <cstring>

#include "cuda/runtime/device_memory.h"
#include "gpu/gpu_test_util.h"
#include "luminal/program.h"
#include "luminal/cuda.h"
#include "luminal/compile.h"

namespace luminal {
namespace {

using cuda::DeviceMemory;
using gpu_test::CudaTest;
using gpu_test::expect_error;

class CudaExternal : public CudaTest {};

std::vector<float> affine(const std::vector<float>& x, float a, float b) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = a * x[i] + b;
  return y;
}

std::vector<float> download(const DeviceMemory& m, size_t n) {
  std::vector<float> v(n);
  m.download(v.data(), n * sizeof(float));
  return v;
}

TEST_F(CudaExternal, OutputsLandInTheCallersMemory) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {64});
  GraphTensor y = (x * 3.0 + 1.0).output();
  Executable rt(g, cuda::backend());
  const std::vector<float> a = gpu_test::spread(64, -2, 2, 1), b = gpu_test::spread(64, -5, 5, 2);
  DeviceMemory in(256), out_a(256), out_b(256);
  in.upload(a.data(), 256);
  rt.set_device_ptr(x, in.get(), 256);
  rt.set_output_ptr(y, out_a.get(), 256);
  rt.execute();
  rt.synchronize();
  gpu_test::expect_all_near(download(out_a, 64), affine(a, 3, 1), 1e-6, 1e-6, "into A");
  gpu_test::expect_all_near(rt.get_f32(y), affine(a, 3, 1), 1e-6, 1e-6, "get reads A");

  // Alternating destinations patch the captured graph; each keeps its own result.
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE(round);
    in.upload(b.data(), 256);
    rt.set_output_ptr(y, out_b.get(), 256);
    rt.execute();
    rt.synchronize();
    gpu_test::expect_all_near(download(out_b, 64), affine(b, 3, 1), 1e-6, 1e-6, "into B");
    gpu_test::expect_all_near(download(out_a, 64), affine(a, 3, 1), 1e-6, 1e-6,
                              "A untouched while B is bound");
    in.upload(a.data(), 256);
    rt.set_output_ptr(y, out_a.get(), 256);
    rt.set_output_ptr(y, out_a.get(), 256);  // the same pointer again: a no-op
    rt.execute();
    rt.synchronize();
    gpu_test::expect_all_near(download(out_a, 64), affine(a, 3, 1), 1e-6, 1e-6, "into A again");
  }
  rt.set_output_ptr(y, nullptr, 0);  // back to an owned buffer
  rt.execute();
  gpu_test::expect_all_near(rt.get_f32(y), affine(a, 3, 1), 1e-6, 1e-6, "owned again");
}

TEST_F(CudaExternal, OutputPointerChecks) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {8});
  GraphTensor y = (x * 2.0).output();
  Executable rt(g, cuda::backend());
  std::vector<float> host(8, 1.0f);
  expect_error([&] { rt.set_output_ptr(y, host.data(), 32); },
               {"[set_output_ptr]", "not CUDA device memory"});
  DeviceMemory small(16), ok(32);
  expect_error([&] { rt.set_output_ptr(y, small.get(), 32); }, {"overrun"});
  expect_error([&] { rt.set_output_ptr(y, ok.get(), 28); }, {"32 bytes", "got 28"});
  expect_error([&] { rt.set_output_ptr(x, ok.get(), 32); }, {"not an output"});
  rt.set_output_ptr(y, ok.get(), 32);
  rt.set_data(x, std::span<const float>(host));
  rt.execute();
  expect_error([&] { rt.remove_buffer(y); }, {"[remove_buffer]", "external memory"});
}

TEST_F(CudaExternal, ExternalOutputMustMatchTheDims) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {Expr::sym("n")});
  GraphTensor y = (x + 1.0).output();
  Executable rt(g, cuda::backend());
  DeviceMemory in(64), out(64);
  const std::vector<float> v = gpu_test::spread(16, 1, 2, 4);
  in.upload(v.data(), 64);
  rt.set_device_ptr(x, in.get(), 64);
  rt.set_output_ptr(y, out.get(), 32);  // sized for n = 8
  expect_error(
      [&] {
        rt.execute({{"n", 16}});
      },
      {"[execute]", "bound to 32 bytes of external memory", "has 64"});
  rt.set_output_ptr(y, out.get(), 64);
  rt.execute({{"n", 16}});
  rt.synchronize();
  gpu_test::expect_all_near(download(out, 16), affine(v, 1, 1), 1e-6, 1e-6, "n = 16");
}

TEST_F(CudaExternal, WorkRunsOnTheGivenStream) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {32});
  GraphTensor y = (x * x).output();
  Executable rt(g, cuda::backend());
  const std::vector<float> a = gpu_test::spread(32, -3, 3, 5);
  DeviceMemory in(128), out(128);
  in.upload(a.data(), 128);
  std::vector<float> want(32);
  for (size_t i = 0; i < 32; ++i) want[i] = a[i] * a[i];
  rt.set_device_ptr(x, in.get(), 128);
  rt.set_output_ptr(y, out.get(), 128);
  rt.set_stream(nullptr);        // the legacy default stream: a blocking copy waits for its work
  for (int i = 0; i < 3; ++i) {  // first run step by step, then the captured graph
    out.fill(0);
    rt.execute();
    gpu_test::expect_all_near(download(out, 32), want, 1e-6, 1e-6, "legacy stream, no sync");
  }
  rt.use_own_stream();
  rt.execute();
  rt.synchronize();
  gpu_test::expect_all_near(download(out, 32), want, 1e-6, 1e-6, "own stream again");
}

TEST_F(CudaExternal, CheckErrorsReportsBadIndicesOfZeroCopyRuns) {
  Graph g;
  GraphTensor table = g.named_tensor("table", {5, 3}).persist();
  GraphTensor idx = g.named_tensor("idx", {3}, DType::I32);
  GraphTensor out = table.gather(idx).output();
  Executable rt(g, cuda::backend());
  const std::vector<float> tv = gpu_test::spread(15, 1, 2);
  rt.set_data(table, std::span<const float>(tv));
  DeviceMemory in(12), res(36);
  const std::vector<int32_t> bad = {0, 7, 2}, good = {4, 0, 2};
  in.upload(bad.data(), 12);
  rt.set_device_ptr(idx, in.get(), 12);
  rt.set_output_ptr(out, res.get(), 36);
  rt.execute();  // nothing is read back: the error waits for check_errors()
  expect_error([&] { rt.check_errors(); }, {"[cuda]", "bad input", "out-of-range gather index"});
  rt.synchronize();
  in.upload(good.data(), 12);
  rt.execute();
  EXPECT_NO_THROW(rt.check_errors());  // the flag was reset
  std::vector<float> want;
  for (int32_t r : good)
    for (int c = 0; c < 3; ++c) want.push_back(tv[size_t(r * 3 + c)]);
  gpu_test::expect_all_near(download(res, 9), want, 0, 0, "gathered rows");
}

TEST_F(CudaExternal, CompiledProgramBindsDeviceInputsAndOutputs) {
  auto p = CompiledProgram::load(std::string(LUMINAL_FIXTURES) + "/pt2/mlp_t215.pt2",
                                 ProgramOptions{.target = cuda::backend()});
  auto ref = CompiledProgram::load(std::string(LUMINAL_FIXTURES) + "/pt2/mlp_t215.pt2");
  for (int64_t batch : {5, 17, 5}) {
    const std::vector<float> x = gpu_test::spread(size_t(batch) * 8, -1, 1, unsigned(batch));
    const std::vector<int64_t> shape{batch, 8};
    ref->set_input(0, std::as_bytes(std::span(x)), shape);
    ref->run();
    const size_t in_bytes = x.size() * 4, out_bytes = size_t(batch) * 4 * 4;
    DeviceMemory in(in_bytes), out(out_bytes);
    in.upload(x.data(), in_bytes);
    p->set_input_device(0, in.get(), in_bytes, shape);
    p->bind();
    ASSERT_EQ(p->output_shape(0), (std::vector<int64_t>{batch, 4}));
    p->set_output_device(0, out.get(), out_bytes);
    p->set_stream(nullptr);
    p->run();
    std::vector<float> want(size_t(batch) * 4);
    const std::vector<std::byte> rb = ref->output_bytes(0);
    std::memcpy(want.data(), rb.data(), rb.size());
    gpu_test::expect_all_near(download(out, want.size()), want, 1e-5, 1e-5, "batch");
    p->set_output_device(0, nullptr, 0);  // `out` is freed next: unbind it first
  }
}

}  // namespace
}  // namespace luminal
