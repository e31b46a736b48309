// The DlrmSparse kernel on the CUDA runtime (device machine only; outputs poisoned first): every
// variant against the plain-loop oracle and the CPU reference, jagged and empty bags, nnz changing
// between executes of one runtime, a misaligned external table, a table above 2^31 elements, and
// bad indices / offsets raising.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

#include "cuda/runtime/device_memory.h"
#include "custom/dlrm_sparse/test_util.h"
#include "gpu/gpu_test_util.h"
#include "luminal/reference.h"
#include "luminal/cuda.h"
#include "luminal/compile.h"

namespace luminal {
namespace {

using custom::TableFormat;
using sparse_test::Case;

class DlrmSparseGpu : public gpu_test::CudaTest {
 protected:
  void SetUp() override {
    gpu_test::CudaTest::SetUp();
    setenv("LUMINAL_CUDA_POISON", "1", 1);  // unwritten output stays NaN-like garbage
  }
};

// |got - want| <= atol + rtol |want| everywhere (NaN fails).
void expect_near(const std::vector<float>& got, const std::vector<double>& want, double atol,
                 double rtol, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const bool ok = std::abs(double(got[i]) - want[i]) <= atol + rtol * std::abs(want[i]);
    ASSERT_TRUE(ok) << what << " element " << i << ": got " << got[i] << ", want " << want[i];
  }
}

double rtol_of(const custom::DlrmSparseShape& s) {
  return s.dtype == DType::BF16 ? 1.0 / 128 : 1e-5;
}

// Runs c on the CUDA runtime (dynamic nnz) `reps` times and checks against the loop oracle.
std::vector<float> run_gpu(const Case& c, int reps = 2, bool split = false) {
  Graph g;
  const sparse_test::Bound b = sparse_test::build_for(g, c, true, split);
  Executable rt(g, cuda::backend());
  std::vector<float> out;
  for (int rep = 0; rep < reps; ++rep) {  // the second execute replays the captured graph
    sparse_test::set_inputs(rt, b, c);
    rt.execute(sparse_test::dyn_of(c));
    out = rt.get_f32(b.out);
  }
  EXPECT_EQ(rt.kernel_count(), split ? 2u : 1u) << "the fused kernels, not the decomposition";
  return out;
}

void check_case(const Case& c, const std::string& what, bool with_cpu, bool split = false) {
  const std::vector<float> got = run_gpu(c, 2, split);
  expect_near(got, sparse_test::loops(c), 1e-4, rtol_of(c.s), what + " vs loops");
  if (!with_cpu) return;
  Graph g;
  const sparse_test::Bound b = sparse_test::build_for(g, c, true);
  ReferenceRuntime rt(g);
  sparse_test::set_inputs(rt, b, c);
  rt.execute(sparse_test::dyn_of(c));
  const std::vector<float> cpu = rt.get_f32(b.out);
  expect_near(got, std::vector<double>(cpu.begin(), cpu.end()), 1e-4, rtol_of(c.s),
              what + " vs cpu");
}

TEST_F(DlrmSparseGpu, AllVariantsMatchLoopsAndCpu) {
  // 5 tables: one pair per lane; 9 tables (10 features): 4x4 register tiles for even d.
  const std::vector<std::vector<int64_t>> table_sets{{50, 3, 1000, 7, 20},
                                                     {50, 3, 1000, 7, 20, 9, 11, 5, 60}};
  uint32_t seed = 100;
  for (const std::vector<int64_t>& rows : table_sets)
    for (int64_t d : {3, 4, 16, 24, 128})
      for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
        for (TableFormat f : {TableFormat::Dense, TableFormat::RowwiseU8})
          for (DType dt : {DType::F32, DType::BF16})
            for (DType it : {DType::I32, DType::I64}) {
              const Case c = sparse_test::random_case(
                  sparse_test::shape(37, d, rows, mode, f, dt, it), seed++, 5);
              check_case(c, fmt::format("{} tables d {} seed {}", rows.size(), d, seed - 1), true);
            }
}

// A KeyedJaggedTensor's bags (closed offsets, other keys' out-of-range ids around them) and
// torchrec's pair order, on every pair path (one per lane, 4x4 tiles, bf16 mma), against the loops
// and the CPU reference.
TEST_F(DlrmSparseGpu, ClosedOffsetsAndUpperPairsMatchLoopsAndCpu) {
  uint32_t seed = 700;
  for (const std::vector<int64_t>& rows : {std::vector<int64_t>{50, 3, 1000, 7, 20},
                                          std::vector<int64_t>{50, 3, 1000, 7, 20, 9, 11, 5, 60}})
    for (int64_t d : {3, 16, 128})
      for (nn::PairOrder pairs : {nn::PairOrder::Lower, nn::PairOrder::Upper})
        for (bool closed : {false, true})
          for (DType dt : {DType::F32, DType::BF16}) {
            custom::DlrmSparseShape s = sparse_test::shape(37, d, rows, nn::BagMode::Sum, TableFormat::Dense, dt,
                                                           seed % 2 ? DType::I64 : DType::I32);
            s.closed = closed, s.pairs = pairs;
            const Case c = sparse_test::random_case(s, seed++, 4);
            check_case(c, fmt::format("{} tables d {} upper {} closed {} seed {}", rows.size(), d,
                                      pairs == nn::PairOrder::Upper, closed, seed - 1), true, /*split=*/false);
            if (closed && pairs == nn::PairOrder::Lower)
              check_case(c, fmt::format("split closed seed {}", seed - 1), true, /*split=*/true);
          }
  custom::DlrmSparseShape big = sparse_test::shape(2048, 128, std::vector<int64_t>(26, 3000), nn::BagMode::Sum,
                                                   TableFormat::Dense, DType::BF16, DType::I64);
  big.closed = true, big.pairs = nn::PairOrder::Upper;
  check_case(sparse_test::random_case(big, 11, 3), "mlperf-like closed upper bf16 batch 2048", false);
}

// The two-kernel form (bags kernel without x, then the finish kernel) against the loops and the
// CPU run of the same two ops: scalar and 16-byte pooled-bag loads, every format and dtype.
TEST_F(DlrmSparseGpu, SplitKernelsMatchLoopsAndCpu) {
  uint32_t seed = 500;
  for (int64_t d : {3, 16, 24, 128})
    for (TableFormat f : {TableFormat::Dense, TableFormat::RowwiseU8})
      for (DType dt : {DType::F32, DType::BF16})
        for (int64_t align : {1, 8}) {
          custom::DlrmSparseShape s = sparse_test::shape(37, d, {50, 3, 1000, 7, 20, 9, 11, 5, 60},
                                                         nn::BagMode::Mean, f, dt, DType::I64);
          s.col_align = align;
          const Case c = sparse_test::random_case(s, seed++, 4);
          check_case(c, fmt::format("split d {} align {} seed {}", d, align, seed - 1), true,
                     /*split=*/true);
        }
  for (int64_t batch : {1, 2048, 16384})
    check_case(sparse_test::random_case(
                   sparse_test::shape(batch, 128, std::vector<int64_t>(26, 3000), nn::BagMode::Sum,
                                      TableFormat::Dense, DType::BF16),
                   9, 2),
               fmt::format("split mlperf-like bf16 batch {}", batch), false, /*split=*/true);
}

TEST_F(DlrmSparseGpu, KaggleAndMlperfBatches) {
  for (int64_t batch : {1, 255, 2048, 16384}) {
    check_case(sparse_test::random_case(
                   sparse_test::shape(batch, 16, std::vector<int64_t>(26, 5000)), 7, 3),
               fmt::format("kaggle-like batch {}", batch), false);
    check_case(sparse_test::random_case(
                   sparse_test::shape(batch, 128, std::vector<int64_t>(26, 3000), nn::BagMode::Sum,
                                      TableFormat::Dense, DType::BF16),
                   8, 2),
               fmt::format("mlperf-like bf16 batch {}", batch), false);
  }
}

// col_align: the kernel writes the pad columns as exact zeros (the output is poisoned first).
TEST_F(DlrmSparseGpu, PaddedOutputColumnsAreZeros) {
  uint32_t seed = 300;
  for (int64_t align : {2, 8, 16})
    for (DType dt : {DType::F32, DType::BF16})
      for (int64_t d : {16, 128}) {
        custom::DlrmSparseShape s = sparse_test::shape(77, d, std::vector<int64_t>(26, 500),
                                                       nn::BagMode::Sum, TableFormat::Dense, dt);
        s.col_align = align;
        const Case c = sparse_test::random_case(s, seed++, 2);
        const std::string what = fmt::format("align {} d {} {}", align, d, dtype_name(dt));
        check_case(c, what, true);
        const std::vector<float> got = run_gpu(c);
        for (int64_t b = 0; b < s.batch; ++b)
          for (int64_t k = s.out_width(); k < s.padded_width(); ++k)
            ASSERT_EQ(got[size_t(b * s.padded_width() + k)], 0.f) << what << " " << b << " " << k;
      }
}

TEST_F(DlrmSparseGpu, NnzChangesBetweenExecutes) {
  const custom::DlrmSparseShape s = sparse_test::shape(64, 16, {100, 9, 40}, nn::BagMode::Mean);
  Graph g;
  const sparse_test::Bound b =
      sparse_test::build(g, s, {Expr::sym("nnz0"), Expr::sym("nnz1"), Expr::sym("nnz2")});
  Executable rt(g, cuda::backend());
  for (uint32_t seed : {1u, 2u, 3u, 1u}) {
    const Case c = sparse_test::random_case(s, seed, 1 + 3 * int(seed));
    sparse_test::set_inputs(rt, b, c);
    rt.execute(sparse_test::dyn_of(c));
    expect_near(rt.get_f32(b.out), sparse_test::loops(c), 1e-4, 1e-5, fmt::format("seed {}", seed));
  }
  EXPECT_EQ(rt.kernel_count(), 1u);
}

TEST_F(DlrmSparseGpu, MisalignedExternalTableUsesScalarLoads) {
  const Case c = sparse_test::random_case(sparse_test::shape(33, 16, {20, 30}), 5, 4);
  Graph g;
  const sparse_test::Bound b = sparse_test::build_for(g, c, true);
  Executable rt(g, cuda::backend());
  sparse_test::set_inputs(rt, b, c);
  const std::vector<float>& t0 = c.tables[0];
  std::vector<float> host(t0.size() + 1, 0.f);  // one float of padding: 4-byte, not 16-byte aligned
  std::memcpy(host.data() + 1, t0.data(), t0.size() * 4);
  cuda::DeviceMemory mem(host.size() * 4);
  mem.upload(host.data(), host.size() * 4);
  rt.set_device_ptr(b.in[1], static_cast<char*>(mem.get()) + 4, t0.size() * 4);
  rt.execute(sparse_test::dyn_of(c));
  expect_near(rt.get_f32(b.out), sparse_test::loops(c), 1e-4, 1e-5, "misaligned table_0");
}

TEST_F(DlrmSparseGpu, TableAbove2Pow31Elements) {
  // 17M rows x 128 u8 codes = 2.18e9 elements: row offsets need 64-bit math. The case indexes only
  // the last 8 rows; the oracle runs on a compact copy holding just those rows (indices shifted).
  const int64_t rows = 17'000'000, d = 128, keep = 8;
  const Case small = sparse_test::random_case(
      sparse_test::shape(16, d, {keep}, nn::BagMode::Sum, TableFormat::RowwiseU8), 9, 3);
  const custom::DlrmSparseShape s =
      sparse_test::shape(16, d, {rows}, nn::BagMode::Sum, TableFormat::RowwiseU8);
  Graph g;
  const sparse_test::Bound b = sparse_test::build(g, s, {Expr::sym("nnz0")});
  Executable rt(g, cuda::backend());
  std::vector<uint8_t> codes(size_t(rows * d), 0);
  std::vector<float> sb(size_t(rows * 2), 0.f);
  for (int64_t j = 0; j < keep * d; ++j)
    codes[size_t((rows - keep) * d + j)] = uint8_t(small.tables[0][size_t(j)]);
  for (int64_t j = 0; j < keep * 2; ++j) sb[size_t((rows - keep) * 2 + j)] = small.sb[0][size_t(j)];
  std::vector<int64_t> idx = small.indices[0];
  for (int64_t& i : idx) i += rows - keep;
  sparse_test::set_floats(rt, b.in[0], small.x, DType::F32);
  rt.set_data(b.in[1], std::span<const uint8_t>(codes));
  rt.set_data(b.in[2], std::span<const float>(sb));
  sparse_test::set_ints(rt, b.in[3], idx, DType::I32);
  sparse_test::set_ints(rt, b.in[4], small.offsets[0], DType::I32);
  rt.execute({{"nnz0", int64_t(idx.size())}});
  expect_near(rt.get_f32(b.out), sparse_test::loops(small), 1e-3, 1e-5, "17M-row table");
}

// Expects execute + read to raise the kernel's error word, with `key` in the message. Error bits
// (dlrm_sparse.cuh): 1 = an index out of range ("an out-of-range gather index"), 4 = bad offsets
// ("bad embedding-bag offsets").
void expect_raises(const Case& c, const std::string& what, const std::string& key,
                   bool split = false) {
  Graph g;
  const sparse_test::Bound b = sparse_test::build_for(g, c, true, split);
  Executable rt(g, cuda::backend());
  sparse_test::set_inputs(rt, b, c);
  try {
    rt.execute(sparse_test::dyn_of(c));
    rt.get_f32(b.out);
    ADD_FAILURE() << what << " must raise";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find(key), std::string::npos) << what << ": " << e.what();
  }
}

TEST_F(DlrmSparseGpu, BadIndicesAndOffsetsRaise) {
  const Case good = sparse_test::random_case(sparse_test::shape(40, 16, {50, 60}), 21, 3);
  Case c = good;
  c.indices[1].push_back(60);
  expect_raises(c, "index == rows", "out-of-range gather index");
  expect_raises(c, "index == rows (split)", "out-of-range gather index", /*split=*/true);
  c = good;
  c.indices[0][c.indices[0].size() / 2] = -1;
  expect_raises(c, "negative index", "out-of-range gather index");
  c = good;
  c.offsets[0][39] = int64_t(c.indices[0].size()) + 1;
  expect_raises(c, "offset past nnz", "bad embedding-bag offsets");
  c = good;
  c.offsets[1][10] = c.offsets[1][11] + 1;
  expect_raises(c, "decreasing offsets", "bad embedding-bag offsets");
  expect_raises(c, "decreasing offsets (split)", "bad embedding-bag offsets", /*split=*/true);
}

}  // namespace
}  // namespace luminal
