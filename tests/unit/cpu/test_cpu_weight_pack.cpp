// Packed constant weights on the CPU backend (src/cpu/weight_pack.h): HostMatmul in each layout
// (weights as bound, packed through 3-d and 2-d descriptors, timed) against a double loop, and a
// packed copy never read stale: new weights under a new version, or at a new address, are packed
// again; version 0 (the caller's memory) is never packed; a full budget packs nothing. Through
// compile(): persisted weights re-uploaded, and zero-copy weights changed in place, between
// executes, against the reference runtime; CrossGemm's packed W the same way.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cpu/host_matmul.h"
#include "cpu_test_util.h"
#include "custom/cross_gemm/test_util.h"
#include "luminal/reference.h"

namespace luminal {
namespace {

using cpu_test::decode;
using cpu_test::randoms;

// v rounded to dt, as bytes; `rounded` gets the values the kernel sees.
std::vector<std::byte> encode(DType dt, const std::vector<float>& v, std::vector<float>& rounded) {
  std::vector<std::byte> out = cpu_test::encode(dt, v);
  rounded.resize(v.size());
  for (size_t i = 0; i < v.size(); ++i) rounded[i] = decode(dt, out, i);
  return out;
}

// y = relu(x W^T + bias) for x [m, k], W [n, k] (nn.Linear's layout, read as a k x n view).
struct Linear {
  int64_t m = 40, n = 48, k = 72;
  DType dt;
  std::vector<float> x, w, bias;               // the values after rounding to dt
  std::vector<std::byte> xb, wb, biasb;

  Linear(DType d, uint32_t seed) : dt(d) { set_weights(seed); }
  void set_weights(uint32_t seed) {
    xb = encode(dt, randoms(size_t(m * k), seed), x);
    wb = encode(dt, randoms(size_t(n * k), seed + 1), w);
    biasb = encode(dt, randoms(size_t(n), seed + 2), bias);
  }
  compiler::MatmulStep step() const { return cpu_test::linear_step(dt, m, n, k); }
  // "" when y matches the double loop (f32: 1e-5; bf16: one rounding of the output).
  std::string mismatch(const std::vector<std::byte>& y) const {
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double acc = bias[size_t(j)], mag = std::abs(bias[size_t(j)]);
        for (int64_t q = 0; q < k; ++q) {
          acc += double(x[size_t(i * k + q)]) * w[size_t(j * k + q)];
          mag += std::abs(double(x[size_t(i * k + q)]) * w[size_t(j * k + q)]);
        }
        const double want = std::max(acc, 0.0), got = decode(dt, y, size_t(i * n + j));
        const double tol = (dt == DType::F32 ? 1e-5 : 1e-2) * (1 + mag);
        if (!(std::abs(got - want) <= tol)) return fmt::format("y[{}, {}] = {}, want {}", i, j, got, want);
      }
    return "";
  }
  std::vector<std::byte> run(cpu::HostMatmul& mm, uint64_t version, const std::byte* weights = nullptr) const {
    std::vector<std::byte> y(size_t(m * n) * dtype_size(dt), std::byte{0xff});  // poison (NaN)
    mm.run({}, xb.data(), weights ? weights : wb.data(), y.data(), biasb.data(), version);
    return y;
  }
};

using Layout = cpu::HostMatmul::Layout;

TEST(CpuWeightPack, EveryLayoutMatchesALoopAndFollowsNewWeights) {
  for (DType dt : {DType::F32, DType::BF16})
    for (Layout layout : {Layout::plain, Layout::packed_3d, Layout::packed_2d, Layout::timed}) {
      const std::string what = fmt::format("{} layout {}", dtype_name(dt), int(layout));
      Linear lin(dt, 11);
      cpu::WeightPacks packs(size_t(1) << 30);
      cpu::HostMatmul mm(lin.step(), dt, &packs, layout);
      const uint64_t v1 = cpu::next_input_version();
      EXPECT_EQ(lin.mismatch(lin.run(mm, v1)), "") << what;
      const std::string impl = mm.implementation();
      // oneDNN's x86 matmuls (brgemm) read blocked weights: a named packed layout packs.
      if (layout == Layout::packed_3d || layout == Layout::packed_2d) {
        if (dt == DType::F32) {
          EXPECT_GT(packs.bytes(), 0u) << what << ": " << impl;
        }
        if (packs.bytes() > 0) {
          EXPECT_NE(impl.find("packed weights"), std::string::npos) << what << ": " << impl;
        }
      }
      if (layout == Layout::plain) {
        EXPECT_EQ(packs.bytes(), 0u) << what;
      }
      EXPECT_EQ(lin.mismatch(lin.run(mm, v1)), "") << what << " (second call, packed copy reused)";
      // New bytes in the same buffer under a new version: packed again.
      lin.set_weights(23);
      EXPECT_EQ(lin.mismatch(lin.run(mm, cpu::next_input_version())), "") << what << " (new version)";
      // New bytes at another address, even with an old version number: packed again.
      lin.set_weights(37);
      const std::vector<std::byte> moved = lin.wb;
      EXPECT_EQ(lin.mismatch(lin.run(mm, v1, moved.data())), "") << what << " (new address)";
    }
}

TEST(CpuWeightPack, VersionZeroAndAFullBudgetReadTheWeightsAsBound) {
  for (DType dt : {DType::F32, DType::BF16}) {
    Linear lin(dt, 5);
    cpu::WeightPacks packs(size_t(1) << 30);
    cpu::HostMatmul mm(lin.step(), dt, &packs, Layout::packed_2d);
    EXPECT_EQ(lin.mismatch(lin.run(mm, 0)), "") << dtype_name(dt);
    EXPECT_EQ(packs.bytes(), 0u) << "version 0 (weights that may change in place) must not be packed";
    lin.set_weights(6);  // changed in place, no version: read as they are now
    EXPECT_EQ(lin.mismatch(lin.run(mm, 0)), "") << dtype_name(dt) << " (changed in place)";

    cpu::WeightPacks tiny(16);
    cpu::HostMatmul small(lin.step(), dt, &tiny, Layout::packed_2d);
    EXPECT_EQ(lin.mismatch(lin.run(small, cpu::next_input_version())), "") << dtype_name(dt);
    EXPECT_EQ(tiny.bytes(), 0u);
    EXPECT_EQ(small.implementation().find("packed"), std::string::npos) << small.implementation();
  }
}

TEST(CpuWeightPack, ReleasingTheLastUserFreesAPack) {
  const dnnl::memory::desc d({64, 64}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::ab);
  cpu::WeightPacks packs(size_t(1) << 20);
  int owner = 0;
  ASSERT_TRUE(packs.reserve(&owner, d));
  ASSERT_TRUE(packs.reserve(&owner, d));
  EXPECT_EQ(packs.bytes(), d.get_size());
  packs.release(&owner, d);
  EXPECT_EQ(packs.bytes(), d.get_size());
  packs.release(&owner, d);
  EXPECT_EQ(packs.bytes(), 0u);
  EXPECT_FALSE(packs.reserve(&owner, dnnl::memory::desc({1024, 1024}, dnnl::memory::data_type::f32,
                                                        dnnl::memory::format_tag::ab)))
      << "4 MiB does not fit a 1 MiB budget";
}

// A persisted Linear layer through compile(): the weights re-uploaded between executes, then bound
// zero-copy and changed in place; every result against the reference runtime on the same values.
TEST(CpuWeightPack, CompiledModelFollowsReuploadedAndInPlaceWeights) {
  Graph g;
  const GraphTensor x = g.named_tensor("x", {64, 96});
  GraphTensor w = g.named_tensor("w", {80, 96});
  GraphTensor b = g.named_tensor("b", {80});
  w.persist();
  b.persist();
  const GraphTensor y = (x.matmul(w.transpose(0, 1)) + b).relu().output();
  const auto rt = cpu_test::cpu_plan(g);
  ReferenceRuntime ref(g);
  std::vector<float> xv = randoms(64 * 96, 1), bv = randoms(80, 2);
  auto compare = [&](const std::vector<float>& wv, const std::string& what) {
    ref.set_data(x, std::span<const float>(xv));
    ref.set_data(w, std::span<const float>(wv));
    ref.set_data(b, std::span<const float>(bv));
    ref.execute();
    rt->set_data(x, std::span<const float>(xv));
    rt->execute();
    const std::vector<float> got = rt->get_f32(y), want = ref.get_f32(y);
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4) << what << " at " << i;
  };
  rt->set_data(b, std::span<const float>(bv));
  for (uint32_t seed : {3u, 4u, 5u}) {
    const std::vector<float> wv = randoms(80 * 96, seed);
    rt->set_data(w, std::span<const float>(wv));
    compare(wv, fmt::format("uploaded weights {}", seed));
    compare(wv, fmt::format("uploaded weights {}, again", seed));
  }
  std::vector<float> caller = randoms(80 * 96, 8);
  rt->set_device_ptr(w, caller.data(), caller.size() * sizeof(float));
  compare(caller, "zero-copy weights");
  const std::vector<float> next = randoms(80 * 96, 9);
  std::copy(next.begin(), next.end(), caller.begin());  // the same memory, changed in place
  compare(caller, "zero-copy weights changed in place");
}

TEST(CpuWeightPack, CrossGemmFollowsReuploadedWeights) {
  namespace ct = cross_gemm_test;
  for (DType dt : {DType::F32, DType::BF16}) {
    ct::Case c = ct::random_case(64, 72, 24, dt, 3);
    Graph g;
    ct::Bound bound = ct::build(g, c);
    g.node_mut(bound.w.id).persist = true;
    const auto rt = cpu_test::cpu_plan(g);
    for (uint32_t seed : {3u, 4u}) {
      const ct::Case next = ct::random_case(64, 72, 24, dt, seed);
      c.w = next.w;  // new weights; the other inputs as before
      ct::set_inputs(*rt, bound, c);
      rt->execute();
      const double rtol = dt == DType::F32 ? 1e-6 : 4.0 / 256;
      EXPECT_EQ(ct::mismatch(rt->get_f32(bound.out), ct::loops(c), ct::magnitudes(c), 1e-6, rtol), "")
          << dtype_name(dt) << " weights " << seed;
    }
  }
}

}  // namespace
}  // namespace luminal
