// The EmbeddingBag kernel on the CUDA runtime (device machine only; outputs poisoned first): every
// variant against the plain-loop oracle and the CPU reference, long and empty bags, nnz and B
// changing between executes of one runtime, a misaligned external table, a table above 2^31
// elements, and bad indices / offsets raising (the bad bag NaN, the others still right).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "cuda/runtime/device_memory.h"
#include "custom/embedding_bag/test_util.h"
#include "gpu/gpu_test_util.h"
#include "luminal/reference.h"
#include "luminal/cuda.h"
#include "luminal/compile.h"

namespace luminal {
namespace {

using bag_test::Case;

class EmbeddingBagGpu : public gpu_test::CudaTest {
 protected:
  void SetUp() override {
    gpu_test::CudaTest::SetUp();
    setenv("LUMINAL_CUDA_POISON", "1", 1);  // unwritten output stays NaN-like garbage
  }
};

double atol_of(DType dt) { return dt == DType::F32 ? 1e-5 : 1e-2; }

// Runs c on the CUDA runtime (dynamic nnz and B) twice: the second execute replays the graph.
std::vector<float> run_gpu(const Case& c) {
  Graph g;
  const bag_test::Bound b = bag_test::build_for(g, c, true);
  Executable rt(g, cuda::backend());
  std::vector<float> out;
  for (int rep = 0; rep < 2; ++rep) {
    bag_test::set_inputs(rt, b, c);
    rt.execute(bag_test::dyn_of(c));
    out = rt.get_f32(b.out);
  }
  EXPECT_EQ(rt.kernel_count(), 1u) << "the bag kernel, not the decomposition";
  return out;
}

std::vector<float> run_cpu(const Case& c) {
  Graph g;
  const bag_test::Bound b = bag_test::build_for(g, c, true);
  ReferenceRuntime rt(g);
  bag_test::set_inputs(rt, b, c);
  rt.execute(bag_test::dyn_of(c));
  return rt.get_f32(b.out);
}

void check_case(const Case& c, bool with_cpu) {
  const std::vector<float> got = run_gpu(c);
  const double atol = atol_of(c.dtype), rtol = bag_test::rtol_of(c.dtype);
  ASSERT_EQ(bag_test::mismatch(got, bag_test::loops(c), atol, rtol), "") << c.describe();
  if (!with_cpu) return;
  const std::vector<float> cpu = run_cpu(c);
  ASSERT_EQ(bag_test::mismatch(got, std::vector<double>(cpu.begin(), cpu.end()), atol, rtol), "")
      << c.describe() << " vs cpu";
}

TEST_F(EmbeddingBagGpu, AllVariantsMatchLoopsAndCpu) {
  uint32_t seed = 100;
  for (int64_t d : {1, 3, 6, 16, 24, 128, 257})
    for (DType dt : {DType::F32, DType::BF16, DType::F16})
      for (DType it : {DType::I32, DType::I64})
        for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
          check_case(bag_test::random_case(50, d, 37, mode, dt, it, seed++, 9), true);
}

TEST_F(EmbeddingBagGpu, BatchesLongBagsAndWideRows) {
  for (int64_t batch : {1, 2, 255, 2048, 16384}) {
    check_case(
        bag_test::random_case(5000, 16, batch, nn::BagMode::Sum, DType::F32, DType::I32, 7, 3),
        false);
    check_case(
        bag_test::random_case(3000, 128, batch, nn::BagMode::Mean, DType::BF16, DType::I64, 8, 40),
        false);
  }
  check_case(bag_test::random_case(100, 4096, 9, nn::BagMode::Sum, DType::F32, DType::I64, 9, 5),
             true);  // 8 column blocks
}

TEST_F(EmbeddingBagGpu, NnzAndBatchChangeBetweenExecutes) {
  const Case first =
      bag_test::random_case(100, 16, 64, nn::BagMode::Mean, DType::F32, DType::I32, 1);
  Graph g;
  const bag_test::Bound b = bag_test::build_for(g, first, true);
  Executable rt(g, cuda::backend());
  for (uint32_t seed : {1u, 2u, 3u, 1u}) {
    const Case c = bag_test::random_case(100, 16, 16 * int64_t(seed) + 5, nn::BagMode::Mean,
                                         DType::F32, DType::I32, seed, 1 + 3 * int(seed));
    bag_test::set_inputs(rt, b, c);
    rt.execute(bag_test::dyn_of(c));
    ASSERT_EQ(bag_test::mismatch(rt.get_f32(b.out), bag_test::loops(c), 1e-5, 1e-5), "")
        << c.describe();
  }
  EXPECT_EQ(rt.kernel_count(), 1u);
}

TEST_F(EmbeddingBagGpu, MisalignedExternalTableUsesScalarLoads) {
  const Case c = bag_test::random_case(20, 128, 33, nn::BagMode::Sum, DType::BF16, DType::I32, 5);
  Graph g;
  const bag_test::Bound b = bag_test::build_for(g, c, true);
  Executable rt(g, cuda::backend());
  bag_test::set_inputs(rt, b, c);
  std::vector<bf16> host(c.table.size() + 1, bf16(0.f));  // one element of padding: 2-byte aligned
  for (size_t i = 0; i < c.table.size(); ++i) host[i + 1] = bf16(c.table[i]);
  cuda::DeviceMemory mem(host.size() * 2);
  mem.upload(host.data(), host.size() * 2);
  rt.set_device_ptr(b.table, static_cast<char*>(mem.get()) + 2, c.table.size() * 2);
  rt.execute(bag_test::dyn_of(c));
  ASSERT_EQ(bag_test::mismatch(rt.get_f32(b.out), bag_test::loops(c), 1e-2, 1.0 / 64), "")
      << "misaligned table";
}

TEST_F(EmbeddingBagGpu, TableAbove2Pow31Elements) {
  // 17M rows x 128 bf16 = 2.18e9 elements: row offsets need 64-bit math. The case indexes only the
  // last 8 rows; the oracle runs on a compact copy holding just those rows (indices shifted).
  const int64_t rows = 17'000'000, d = 128, keep = 8;
  const Case small =
      bag_test::random_case(keep, d, 16, nn::BagMode::Sum, DType::BF16, DType::I64, 9);
  Case big = small;
  big.rows = rows;
  big.table.clear();
  for (int64_t& i : big.indices) i += rows - keep;
  Graph g;
  const bag_test::Bound b = bag_test::build_for(g, big, true);
  Executable rt(g, cuda::backend());
  std::vector<bf16> table(size_t(rows * d), bf16(0.f));
  for (int64_t j = 0; j < keep * d; ++j)
    table[size_t((rows - keep) * d + j)] = bf16(small.table[size_t(j)]);
  rt.set_data(b.table, std::span<const bf16>(table));
  bag_test::set_ints(rt, b.indices, big.indices, DType::I64);
  bag_test::set_ints(rt, b.offsets, big.offsets, DType::I64);
  rt.execute(bag_test::dyn_of(big));
  ASSERT_EQ(bag_test::mismatch(rt.get_f32(b.out), bag_test::loops(small), 1e-2, 1.0 / 64), "")
      << "17M-row table";
}

// Runs c with the output in caller memory and expects the execute to raise the error word with
// `key` in the message (error bits, embedding_bag.cuh: 1 = an index out of range, 4 = bad
// offsets); the bags `bad` are then all NaN (the oracle agrees) and every other bag still right.
void expect_raises(const Case& c, const std::vector<int64_t>& bad, const std::string& what,
                   const std::string& key) {
  SCOPED_TRACE(what);
  Graph g;
  const bag_test::Bound b = bag_test::build_for(g, c, true);
  Executable rt(g, cuda::backend());
  bag_test::set_inputs(rt, b, c);
  const size_t n = size_t(c.batch() * c.dim);
  cuda::DeviceMemory out(n * 4);
  rt.set_output_ptr(b.out, out.get(), n * 4);
  try {
    rt.execute(bag_test::dyn_of(c));
    rt.check_errors();
    ADD_FAILURE() << what << " must raise";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << e.what();
  }
  std::vector<float> got(n);
  out.download(got.data(), n * 4);
  const std::vector<double> want = bag_test::loops(c);
  std::vector<int64_t> nan_bags;
  for (int64_t bag = 0; bag < c.batch(); ++bag)
    if (std::isnan(want[size_t(bag * c.dim)])) nan_bags.push_back(bag);
  EXPECT_EQ(nan_bags, bad) << "the oracle's bad bags";
  EXPECT_EQ(bag_test::mismatch(got, want, 1e-5, 1e-5), "");
}

// Closed offsets [B + 1] inside a longer index list (a KeyedJaggedTensor key's bags).
// per_sample_weights (a weighted KeyedJaggedTensor): the weighted kernel, open and closed offsets.
TEST_F(EmbeddingBagGpu, PerSampleWeightsMatchLoops) {
  uint32_t seed = 950;
  for (DType dt : {DType::F32, DType::BF16})
    for (bool closed : {false, true}) {
      Case c = bag_test::random_case(200, 16, 37, nn::BagMode::Sum, dt, DType::I64, seed);
      if (closed) c = bag_test::closed_case(c, 5, 4, seed);
      c = bag_test::weighted(c, seed + 1);
      seed += 2;
      Graph g;
      const bag_test::Bound b = bag_test::build_for(g, c, true);
      Executable rt(g, cuda::backend());
      bag_test::set_inputs(rt, b, c);
      rt.execute(bag_test::dyn_of(c));
      EXPECT_EQ(bag_test::mismatch(rt.get_f32(b.out), bag_test::loops(c), 3 * atol_of(dt), bag_test::rtol_of(dt)), "")
          << c.describe();
      EXPECT_EQ(rt.kernel_count(), 1u) << "the weighted bag kernel, not the decomposition";
    }
}

TEST_F(EmbeddingBagGpu, ClosedOffsetsMatchLoopsAndCpu) {
  uint32_t seed = 500;
  for (int64_t d : {3, 16, 128})
    for (DType dt : {DType::F32, DType::BF16})
      for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
        for (int64_t batch : {1, 300}) {
          check_case(bag_test::closed_case(bag_test::random_case(50, d, batch, mode, dt, DType::I64, seed, 6), 5, 9,
                                           seed),
                     true);
          ++seed;
        }
  Case c = bag_test::closed_case(bag_test::random_case(50, 16, 40, nn::BagMode::Sum, DType::F32, DType::I32, 9), 3,
                                 4, 9);
  c.offsets.back() = int64_t(c.indices.size()) + 1;  // the closing offset past nnz
  expect_raises(c, {c.batch() - 1}, "closing offset past nnz", "bad embedding-bag offsets");
}

TEST_F(EmbeddingBagGpu, BadIndicesRaise) {
  const Case good = bag_test::random_case(50, 16, 40, nn::BagMode::Sum, DType::F32, DType::I32, 21);
  const int64_t last = good.batch() - 1;
  Case c = good;
  c.indices.push_back(50);  // joins the last bag
  expect_raises(c, {last}, "index == rows", "out-of-range gather index");
  c = good;
  c.indices[size_t(c.offsets[1])] = -1;  // the first row of bag 1 (a long bag)
  expect_raises(c, {1}, "negative index", "out-of-range gather index");
}

TEST_F(EmbeddingBagGpu, BadOffsetsRaise) {
  const Case good =
      bag_test::random_case(50, 16, 40, nn::BagMode::Mean, DType::F32, DType::I64, 22);
  const int64_t last = good.batch() - 1, nnz = int64_t(good.indices.size());
  Case c = good;
  c.offsets[size_t(last)] = nnz + 1;  // bag last - 1 ends past nnz, the last one starts there
  expect_raises(c, {last - 1, last}, "offset past nnz", "bad embedding-bag offsets");
  c = good;
  c.offsets[0] = -1;
  expect_raises(c, {0}, "negative offset", "bad embedding-bag offsets");
  c = good;
  c.offsets[11] = c.offsets[12] + 1;  // bag 11 ends before it starts (bag 10 only grows)
  expect_raises(c, {11}, "decreasing offsets", "bad embedding-bag offsets");
}

}  // namespace
}  // namespace luminal
