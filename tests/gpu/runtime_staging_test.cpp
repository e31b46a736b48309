// Staged host inputs on CUDA: one pinned region and one upload per execute, host_input writes in
// place, consumed-input semantics, device pointers and buffer moves alongside.
#include <gtest/gtest.h>

#include <cstring>

#include "cuda/runtime/device_memory.h"
#include "gpu/gpu_test_util.h"
#include "luminal/reference.h"
#include "luminal/cuda.h"
#include "luminal/compile.h"

namespace luminal {
namespace {

using gpu_test::CudaTest;
using gpu_test::expect_error;

class CudaStaging : public CudaTest {};

// y = x * 2 + z (x f32 [n], z f32 [n]); w is a persisted weight, never staged.
struct Model {
  Graph g;
  GraphTensor x, z, w, y;
  explicit Model(int64_t n) {
    x = g.named_tensor("x", {n});
    z = g.named_tensor("z", {n});
    w = g.named_tensor("w", {n}).persist();
    y = (x * 2.0 + z * w).output();
  }
};

std::vector<float> want(const std::vector<float>& x, const std::vector<float>& z,
                        const std::vector<float>& w) {
  std::vector<float> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * 2.0f + z[i] * w[i];
  return y;
}

void write(std::span<std::byte> slot, const std::vector<float>& v) {
  ASSERT_EQ(slot.size(), v.size() * sizeof(float));
  std::memcpy(slot.data(), v.data(), slot.size());
}

TEST_F(CudaStaging, HostInputAndSetDataEveryCall) {
  const int64_t n = 26624;  // 104 KiB, the seed DLRM's dense_x
  Model m(n);
  Executable rt(m.g, cuda::backend());
  const std::vector<float> w = gpu_test::spread(size_t(n), 0.5f, 1.5f, 9);
  rt.set_data(m.w, std::span<const float>(w));
  for (unsigned it = 0; it < 6; ++it) {
    const std::vector<float> x = gpu_test::spread(size_t(n), -1, 1, 10 + it);
    const std::vector<float> z = gpu_test::spread(size_t(n), -3, 3, 20 + it);
    write(rt.host_input(m.x), x);  // in place
    rt.set_data(m.z, std::span<const float>(z));
    rt.execute();
    gpu_test::expect_all_near(rt.get_f32(m.y), want(x, z, w), 1e-6, 1e-6,
                              "iteration " + std::to_string(it));
    // Consumed: neither input may be reused by the next execute.
    expect_error([&] { rt.execute(); }, {"[execute]", "has no data"});
  }
}

// Overwriting a staged input right after an execute (no sync) must not change what that execute
// read: set_data waits for the upload. Each result is moved out and checked afterwards.
TEST_F(CudaStaging, RewritingRightAfterExecuteDoesNotRace) {
  const int64_t n = 1 << 22;  // 16 MiB per input: the upload takes long enough to race
  Model m(n);
  Executable rt(m.g, cuda::backend());
  const std::vector<float> w = gpu_test::spread(size_t(n), 0.5f, 1.5f, 1);
  rt.set_data(m.w, std::span<const float>(w));
  Graph rg;  // reads a moved-out result back
  GraphTensor r = rg.named_tensor("r", {n});
  GraphTensor r_out = (r * 1.0).output();
  Executable reader(rg, cuda::backend());
  std::vector<std::vector<float>> xs, zs;
  std::vector<Buffer> results;
  for (unsigned it = 0; it < 4; ++it) {
    xs.push_back(gpu_test::spread(size_t(n), -1, 1, 30 + it));
    zs.push_back(gpu_test::spread(size_t(n), -1, 1, 40 + it));
  }
  rt.set_data(m.x, std::span<const float>(xs[0]));
  rt.set_data(m.z, std::span<const float>(zs[0]));
  for (unsigned it = 0; it < 4; ++it) {
    rt.execute();
    if (it + 1 < 4) {  // queued behind the running execute
      write(rt.host_input(m.x), xs[it + 1]);
      rt.set_data(m.z, std::span<const float>(zs[it + 1]));
    }
    results.push_back(rt.remove_buffer(m.y));
  }
  for (unsigned it = 0; it < 4; ++it) {
    reader.set_buffer(r, std::move(results[it]));
    reader.execute();
    gpu_test::expect_all_near(reader.get_f32(r_out), want(xs[it], zs[it], w), 1e-6, 1e-6,
                              "execute " + std::to_string(it));
  }
}

TEST_F(CudaStaging, DevicePointersAndBufferMovesAlongsideStagedInputs) {
  const int64_t n = 1000;
  Model m(n);
  Executable rt(m.g, cuda::backend());
  const std::vector<float> w = gpu_test::spread(size_t(n), 0.5f, 1.5f, 2);
  const std::vector<float> x = gpu_test::spread(size_t(n), -1, 1, 3);
  const std::vector<float> z = gpu_test::spread(size_t(n), -1, 1, 4);
  rt.set_data(m.w, std::span<const float>(w));
  cuda::DeviceMemory dx(size_t(n) * 4);
  dx.upload(x.data(), size_t(n) * 4);
  for (int round = 0; round < 2; ++round) {  // external x, staged z; then both staged again
    if (round == 0)
      rt.set_device_ptr(m.x, dx.get(), size_t(n) * 4);
    else
      rt.set_data(m.x, std::span<const float>(x));
    rt.set_data(m.z, std::span<const float>(z));
    rt.execute();
    gpu_test::expect_all_near(rt.get_f32(m.y), want(x, z, w), 1e-6, 1e-6,
                              "round " + std::to_string(round));
  }
  // A staged input reads back before execute, and moves out and back in as a device buffer.
  rt.set_data(m.x, std::span<const float>(x));
  std::vector<std::byte> xb = rt.get_bytes(m.x);
  ASSERT_EQ(xb.size(), size_t(n) * 4);
  EXPECT_EQ(std::memcmp(xb.data(), x.data(), xb.size()), 0);
  Buffer bx = rt.remove_buffer(m.x);
  rt.set_data(m.z, std::span<const float>(z));
  expect_error([&] { rt.execute(); }, {"'x' has no data"});
  rt.set_data(m.z, std::span<const float>(z));
  rt.set_buffer(m.x, std::move(bx));
  rt.execute();
  gpu_test::expect_all_near(rt.get_f32(m.y), want(x, z, w), 1e-6, 1e-6, "moved back in");
}

TEST_F(CudaStaging, HostInputChecks) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {Expr::sym("n")});
  GraphTensor k = g.named_tensor("k", {4});
  GraphTensor w = g.named_tensor("w", {4}).persist();
  GraphTensor unused = g.named_tensor("unused", {4});
  GraphTensor y = (x.sum(0).expand_dim(0, 4) + k * w).output();
  (void)unused;
  Executable rt(g, cuda::backend());
  expect_error([&] { rt.host_input(w); }, {"[host_input]", "'w'", "persisted"});
  expect_error([&] { rt.host_input(unused); },
               {"[host_input]", "'unused'", "not read by the plan"});
  expect_error([&] { rt.host_input(y); }, {"[host_input]", "not an Input"});
  expect_error([&] { rt.host_input(x); }, {"[host_input]", "'x'", "symbolic shape", "byte count"});
  expect_error([&] { rt.host_input(k, 12); }, {"[host_input]", "'k'", "4 elements"});
  const std::vector<float> wv{1, 2, 3, 4}, kv{0.5f, -1, 2, 4};
  rt.set_data(w, std::span<const float>(wv));
  // The symbolic input grows from 3 to 5000 elements after k was written: k's data survives the
  // new layout.
  for (int64_t len : {3, 5000, 7}) {
    write(rt.host_input(k), kv);
    std::vector<float> xv = gpu_test::spread(size_t(len), -1, 1, unsigned(len));
    write(rt.host_input(x, size_t(len) * 4), xv);
    rt.execute({{"n", len}});
    double s = 0;
    for (float v : xv) s += v;
    std::vector<float> expect(4);
    for (int i = 0; i < 4; ++i) expect[size_t(i)] = float(s) + kv[size_t(i)] * wv[size_t(i)];
    gpu_test::expect_all_near(rt.get_f32(y), expect, 1e-2, 1e-4, "n=" + std::to_string(len));
  }
}

}  // namespace
}  // namespace luminal
