// The BagConcat kernel on the CUDA runtime (device machine only; outputs poisoned first): every
// variant against the double-loop oracle and the CPU reference, batch and bag sizes changing
// between executes of one runtime, MLPerf DLRM-v2's 26 tables x 128 at batch 2048, and a bad index
// raising (its sample's bag NaN, every other part still right).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "cuda/runtime/device_memory.h"
#include "custom/bag_concat/test_util.h"
#include "gpu/gpu_test_util.h"
#include "luminal/compile.h"
#include "luminal/cuda.h"
#include "luminal/reference.h"

namespace luminal {
namespace {

namespace bt = bag_concat_test;

class BagConcatGpu : public gpu_test::CudaTest {
 protected:
  void SetUp() override {
    gpu_test::CudaTest::SetUp();
    setenv("LUMINAL_CUDA_POISON", "1", 1);  // unwritten output stays NaN-like garbage
  }
};

// The first element where got and want differ by more than atol + rtol |want|, or "".
std::string mismatch(const std::vector<float>& got, const std::vector<double>& want, double rtol) {
  if (got.size() != want.size())
    return fmt::format("{} elements, expected {}", got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= 1e-5 + rtol * std::abs(want[i])))
      return fmt::format("element {}: {} vs {}", i, got[i], want[i]);
  return "";
}

double rtol_of(DType dt) { return dt == DType::BF16 ? 1.0 / 128 : 1e-6; }

// Runs rt expecting the out-of-range index error, its output written into a buffer of ours (a
// failed execute leaves no output to get()); that buffer's contents as floats.
std::vector<float> run_expecting_bad_index(Executable& rt, const GraphTensor& out, size_t n, DType dt) {
  const size_t es = dtype_size(dt);
  cuda::DeviceMemory mem(n * es);
  rt.set_output_ptr(out, mem.get(), n * es);
  try {
    rt.execute();
    rt.check_errors();
    ADD_FAILURE() << "an index past the table must raise";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("out-of-range gather index"), std::string::npos) << e.what();
  }
  std::vector<float> got(n);
  if (dt == DType::F32) {
    mem.download(got.data(), n * es);
  } else {
    std::vector<bf16> raw(n);
    mem.download(raw.data(), n * es);
    for (size_t i = 0; i < n; ++i) got[i] = float(raw[i]);
  }
  return got;
}

std::vector<float> run_reference(const bt::Case& c) {
  Graph g;
  const bt::Bound b = bt::build(g, c);
  ReferenceRuntime ref(g);
  bt::set_inputs(ref, b, c);
  ref.execute();
  return ref.get_f32(b.out);
}

TEST_F(BagConcatGpu, AllVariantsMatchLoopsAndReference) {
  uint32_t seed = 300;
  for (DType dt : {DType::F32, DType::BF16})
    for (DType it : {DType::I32, DType::I64})
      for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
        for (int64_t d : {3, 16, 128}) {
          const bt::Case open = bt::random_case(37, d, {50, 3, 1000}, dt, it, mode, seed++);
          // Closed offsets (a KeyedJaggedTensor's keys) for every other case.
          const bt::Case c = seed % 2 == 0 ? bt::closed_case(open) : open;
          SCOPED_TRACE(fmt::format("d {} {} {} seed {}{}", d, dtype_name(dt), dtype_name(it),
                                   seed - 1, c.closed ? " closed" : ""));
          Graph g;
          const bt::Bound b = bt::build(g, c, /*dynamic=*/true, /*cast=*/false);
          Executable rt(g, cuda::backend());
          for (int rep = 0; rep < 2; ++rep) {  // the second execute replays the captured graph
            bt::set_inputs(rt, b, c);
            rt.execute(bt::dyn_of(c));
            const std::vector<float> got = rt.get_f32(b.out);
            ASSERT_EQ(mismatch(got, bt::loops(c), rtol_of(dt)), "") << "rep " << rep;
            const std::vector<float> ref = run_reference(c);
            ASSERT_EQ(mismatch(got, std::vector<double>(ref.begin(), ref.end()), rtol_of(dt)), "")
                << "vs reference";
          }
          EXPECT_EQ(rt.kernel_count(), 1u) << "the bag_concat kernel, not the decomposition";
        }
}

// Row-wise u8 tables (DLRM int8), open and closed offsets: the kernel against loops on the
// dequantized rows and the CPU reference.
TEST_F(BagConcatGpu, RowwiseU8TablesMatchLoopsAndReference) {
  uint32_t seed = 700;
  for (DType dt : {DType::F32, DType::BF16})
    for (DType it : {DType::I32, DType::I64})
      for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
        for (int64_t d : {3, 16, 128}) {
          const bt::Case open = bt::random_case(37, d, {50, 3, 1000}, dt, it, mode, seed++);
          const bt::U8Case u = bt::u8_case(seed % 2 == 0 ? bt::closed_case(open) : open, seed);
          SCOPED_TRACE(fmt::format("u8 d {} {} {} seed {}{}", d, dtype_name(dt), dtype_name(it),
                                   seed - 1, u.c.closed ? " closed" : ""));
          Graph g;
          const bt::U8Bound b = bt::build_u8(g, u);
          Executable rt(g, cuda::backend());
          bt::set_u8_inputs(rt, b, u);
          rt.execute();
          const std::vector<float> got = rt.get_f32(b.out);
          const double rtol = dt == DType::BF16 ? 1.0 / 128 : 1e-5;
          ASSERT_EQ(mismatch(got, bt::loops(u.c), rtol), "");
          ReferenceRuntime ref(g);
          bt::set_u8_inputs(ref, b, u);
          ref.execute();
          const std::vector<float> want = ref.get_f32(b.out);
          ASSERT_EQ(mismatch(got, std::vector<double>(want.begin(), want.end()), rtol), "")
              << "vs reference";
          EXPECT_LE(rt.kernel_count(), 2u)
              << "the bag_concat kernel (and the output cast), not the decomposition";
        }
}

TEST_F(BagConcatGpu, BatchAndBagsChangeBetweenExecutes) {
  const bt::Case first =
      bt::random_case(64, 16, {100, 7}, DType::F32, DType::I32, nn::BagMode::Sum, 1);
  Graph g;
  const bt::Bound b = bt::build(g, first, true, false);
  Executable rt(g, cuda::backend());
  for (uint32_t seed : {1u, 2u, 3u, 1u}) {
    const bt::Case c = bt::random_case(16 * int64_t(seed) + 5, 16, {100, 7}, DType::F32, DType::I32,
                                       nn::BagMode::Sum, seed);
    bt::set_inputs(rt, b, c);
    rt.execute(bt::dyn_of(c));
    ASSERT_EQ(mismatch(rt.get_f32(b.out), bt::loops(c), 1e-6), "") << "batch " << c.batch;
  }
  EXPECT_EQ(rt.kernel_count(), 1u);
}

// Split: the bags without x (one kernel that reads no bottom-MLP output), then a concat with x:
// dense and row-wise u8 tables, open and closed offsets, batch changing between executes (dense),
// against loops, and the CPU reference at the small batches.
TEST_F(BagConcatGpu, BagsOnlyThenConcatMatchLoopsAndReference) {
  uint32_t seed = 900;
  for (DType dt : {DType::F32, DType::BF16})
    for (bool closed : {false, true}) {
      SCOPED_TRACE(fmt::format("{} {}", dtype_name(dt), closed ? "closed" : "open"));
      const auto case_of = [&](int64_t batch) {
        const bt::Case open = bt::random_case(batch, 128, {50, 3, 1000}, dt, DType::I32, nn::BagMode::Sum, seed++);
        return closed ? bt::closed_case(open) : open;
      };
      Graph g;
      const bt::Bound b = bt::build(g, case_of(37), /*dynamic=*/true, /*cast=*/false, /*split=*/true);
      Executable rt(g, cuda::backend());
      for (int64_t batch : {37, 270, 5}) {
        const bt::Case c = case_of(batch);
        bt::set_inputs(rt, b, c);
        rt.execute(bt::dyn_of(c));
        const std::vector<float> got = rt.get_f32(b.out);
        ASSERT_EQ(mismatch(got, bt::loops(c), rtol_of(dt)), "") << "batch " << batch;
        if (batch > 100) continue;  // the reference's bag decomposition is O(batch x nnz)
        const std::vector<float> ref = run_reference(c);
        ASSERT_EQ(mismatch(got, std::vector<double>(ref.begin(), ref.end()), rtol_of(dt)), "") << "vs reference";
      }
      EXPECT_EQ(rt.kernel_count(), 2u) << "the bags kernel and the concat";
      const bt::U8Case u = bt::u8_case(case_of(37), seed++);
      Graph gu;
      const bt::U8Bound bu = bt::build_u8(gu, u, /*split=*/true);
      Executable ru(gu, cuda::backend());
      bt::set_u8_inputs(ru, bu, u);
      ru.execute();
      ASSERT_EQ(mismatch(ru.get_f32(bu.out), bt::loops(u.c), rtol_of(dt) + 1e-5), "") << "row-wise u8 tables";
    }
}

TEST_F(BagConcatGpu, MlperfShape) {
  std::vector<int64_t> rows;
  for (int64_t t = 0; t < 26; ++t) rows.push_back(t % 3 == 0 ? 4000 : 40 + t);
  const bt::Case c =
      bt::random_case(2048, 128, rows, DType::BF16, DType::I32, nn::BagMode::Sum, 26);
  Graph g;
  const bt::Bound b = bt::build(g, c, false, false);
  Executable rt(g, cuda::backend());
  bt::set_inputs(rt, b, c);
  rt.execute();
  ASSERT_EQ(mismatch(rt.get_f32(b.out), bt::loops(c), 1.0 / 128), "");
  EXPECT_EQ(rt.kernel_count(), 1u);
}

// Bags of up to 120 rows (DLRM-v2's 100-hot table): at batch 37 four threads share a bag's rows
// (bag_concat.cuh's split_bag), at 5000 one thread walks them all; both against loops (37 also
// against the reference), then a bad index in a late group of rows (the fourth split's) poisons that bag only.
TEST_F(BagConcatGpu, LongBagsSplitOrNotMatchLoopsAndReference) {
  for (int64_t batch : {37, 5000})
    for (DType dt : {DType::F32, DType::BF16}) {
      custom::BagConcatShape shape;
      shape.dim = 128, shape.dtype = dt, shape.index_dtype = DType::I32, shape.rows = {300, 40};
      SCOPED_TRACE(fmt::format("batch {} {} splits {}", batch, dtype_name(dt),
                               custom::bag_splits(shape, batch)));
      bt::Case c = bt::random_case(batch, 128, {300, 40}, dt, DType::I32, nn::BagMode::Mean,
                                   uint32_t(batch), 120);
      Graph g;
      const bt::Bound b = bt::build(g, c, false, false);
      Executable rt(g, cuda::backend());
      bt::set_inputs(rt, b, c);
      rt.execute();
      const std::vector<float> got = rt.get_f32(b.out);
      ASSERT_EQ(mismatch(got, bt::loops(c), rtol_of(dt)), "");
      if (batch < 100) {  // the reference's bag decomposition is O(batch x nnz): minutes at 5000
        const std::vector<float> ref = run_reference(c);
        ASSERT_EQ(mismatch(got, std::vector<double>(ref.begin(), ref.end()), rtol_of(dt)), "")
            << "vs reference";
      }
      EXPECT_EQ(rt.kernel_count(), 1u);

      int64_t bad =
          0;  // the first sample with more than 30 rows in table 0: row 30 is in split 3's group
      while (bad + 1 < c.batch && c.offsets[0][size_t(bad + 1)] - c.offsets[0][size_t(bad)] <= 30)
        ++bad;
      ASSERT_LT(bad + 1, c.batch) << "a bag of more than 30 rows";
      c.indices[0][size_t(c.offsets[0][size_t(bad)] + 30)] = 300;  // table 0 has 300 rows
      bt::set_inputs(rt, b, c);
      const size_t w = size_t(3 * c.d);
      const std::vector<float> poisoned = run_expecting_bad_index(rt, b.out, size_t(c.batch) * w, dt);
      for (int64_t s = 0; s < c.batch; ++s)
        for (size_t k = 0; k < w; ++k) {
          const size_t i = size_t(s) * w + k;
          if (s == bad && k >= size_t(c.d) && k < size_t(2 * c.d))
            ASSERT_TRUE(std::isnan(poisoned[i])) << "sample " << s << " column " << k;
          else
            ASSERT_EQ(poisoned[i], got[i]) << "sample " << s << " column " << k;
        }
    }
}

TEST_F(BagConcatGpu, BadIndexRaisesAndPoisonsItsBagOnly) {
  bt::Case c = bt::random_case(40, 16, {50, 30}, DType::F32, DType::I32, nn::BagMode::Sum, 77);
  int64_t bad_sample = 0;  // the sample whose table-1 bag holds index 0 of table 1's indices
  while (bad_sample + 1 < c.batch && c.offsets[1][size_t(bad_sample + 1)] == 0) ++bad_sample;
  const std::vector<double> want = bt::loops(c);  // the bad bag is not compared
  c.indices[1][0] = 30;                           // table 1 has 30 rows
  Graph g;
  const bt::Bound b = bt::build(g, c, false, false);
  Executable rt(g, cuda::backend());
  bt::set_inputs(rt, b, c);
  const size_t w = size_t(3 * c.d);
  const std::vector<float> got = run_expecting_bad_index(rt, b.out, size_t(c.batch) * w, DType::F32);
  for (int64_t s = 0; s < c.batch; ++s)
    for (size_t k = 0; k < w; ++k) {
      const size_t i = size_t(s) * w + k;
      const bool in_bad_bag = s == bad_sample && k >= size_t(2 * c.d);
      if (in_bad_bag) {
        EXPECT_TRUE(std::isnan(got[i])) << "sample " << s << " column " << k;
      } else {
        ASSERT_NEAR(got[i], want[i], 1e-5) << "sample " << s << " column " << k;
      }
    }
}

}  // namespace
}  // namespace luminal
