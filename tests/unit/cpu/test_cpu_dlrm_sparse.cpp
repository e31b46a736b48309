// DlrmSparse's host kernel on the CPU backend (outputs poisoned first): every variant against the
// plain-loop oracle and the reference runtime's decomposition, jagged and empty bags, nnz changing
// between executes of one plan, and bad indices / offsets raising.
#include <gtest/gtest.h>

#include "cpu_test_util.h"

#include <cmath>

#include "custom/dlrm_sparse/test_util.h"
#include "luminal/compile.h"
#include "luminal/cpu.h"
#include "luminal/reference.h"

namespace luminal {
namespace {

using custom::TableFormat;
using sparse_test::Case;

void expect_near(const std::vector<float>& got, const std::vector<double>& want, double rtol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_TRUE(std::abs(double(got[i]) - want[i]) <= 1e-4 + rtol * std::abs(want[i]))
        << what << " element " << i << ": got " << got[i] << ", want " << want[i];
}

using cpu_test::cpu_plan;

void check_case(const Case& c, const std::string& what) {
  Graph g;
  const sparse_test::Bound b = sparse_test::build_for(g, c, true);
  const auto rt = cpu_plan(g);
  sparse_test::set_inputs(*rt, b, c);
  rt->execute(sparse_test::dyn_of(c));
  const std::vector<float> got = rt->get_f32(b.out);
  ASSERT_EQ(rt->stats().steps.size(), 1u) << what;
  EXPECT_NE(rt->stats().steps[0].find("host kernel"), std::string::npos) << rt->stats().steps[0];
  const double rtol = c.s.dtype == DType::BF16 ? 1.0 / 128 : 1e-5;
  expect_near(got, sparse_test::loops(c), rtol, what + " vs loops");
  ReferenceRuntime ref(g);
  sparse_test::set_inputs(ref, b, c);
  ref.execute(sparse_test::dyn_of(c));
  const std::vector<float> want = ref.get_f32(b.out);
  expect_near(got, std::vector<double>(want.begin(), want.end()), rtol, what + " vs reference");
}

TEST(CpuDlrmSparse, HostKernelMatchesLoopsAndReference) {
  uint32_t seed = 100;
  for (int64_t d : {3, 16, 128})
    for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
      for (TableFormat f : {TableFormat::Dense, TableFormat::RowwiseU8})
        for (DType dt : {DType::F32, DType::BF16})
          for (DType it : {DType::I32, DType::I64}) {
            custom::DlrmSparseShape s = sparse_test::shape(37, d, {50, 3, 1000, 7, 20}, mode, f, dt, it);
            s.col_align = d == 16 ? 8 : 1;  // pad columns must come out as zeros
            const uint32_t case_seed = seed++;
            check_case(sparse_test::random_case(s, case_seed, 5), fmt::format("d {} seed {}", d, case_seed));
          }
}

// A KeyedJaggedTensor's bags (closed offsets, other keys' ids around them) and torchrec's pair order;
// 19 features (two 16-feature blocks, a partial block of 8 rows of Z), d 48 / 128 through the tiled
// transpose (48: the generic-dim instance).
TEST(CpuDlrmSparse, ClosedOffsetsAndUpperPairsMatchLoopsAndReference) {
  uint32_t seed = 400;
  for (int64_t d : {3, 16, 48, 128})
    for (nn::PairOrder pairs : {nn::PairOrder::Lower, nn::PairOrder::Upper})
      for (bool closed : {false, true})
        for (DType dt : {DType::F32, DType::BF16}) {
          custom::DlrmSparseShape s = sparse_test::shape(37, d, {50, 3, 1000, 7, 20, 9, 11, 5, 60, 8, 2, 30, 4, 6,
                                                                 15, 17, 19, 21}, nn::BagMode::Sum, TableFormat::Dense,
                                                         dt, closed ? DType::I64 : DType::I32);
          s.closed = closed, s.pairs = pairs;
          const uint32_t case_seed = seed++;
          check_case(sparse_test::random_case(s, case_seed, 4),
                     fmt::format("d {} {} closed {} seed {}", d, pairs == nn::PairOrder::Upper ? "upper" : "lower",
                                 closed, case_seed));
        }
}

TEST(CpuDlrmSparse, NnzChangesBetweenExecutesOfOnePlan) {
  const custom::DlrmSparseShape s = sparse_test::shape(20, 8, {30, 40, 50});
  const Case a = sparse_test::random_case(s, 1, 2), b = sparse_test::random_case(s, 2, 6);
  Graph g;
  const sparse_test::Bound bound = sparse_test::build_for(g, a, true);
  const auto rt = cpu_plan(g);
  for (const Case* c : {&a, &b, &a}) {
    sparse_test::set_inputs(*rt, bound, *c);
    rt->execute(sparse_test::dyn_of(*c));
    expect_near(rt->get_f32(bound.out), sparse_test::loops(*c), 1e-5, "nnz change");
  }
}

TEST(CpuDlrmSparse, BadIndicesAndOffsetsRaiseAtTheNextRead) {
  const custom::DlrmSparseShape s = sparse_test::shape(8, 4, {10, 20});
  Case bad_index = sparse_test::random_case(s, 3, 3);
  bad_index.indices[1][0] = 20;  // table 1 has 20 rows
  Case bad_offsets = sparse_test::random_case(s, 4, 3);
  bad_offsets.offsets[0][3] = -1;
  for (const auto& [c, want] : {std::pair{&bad_index, "out-of-range"}, std::pair{&bad_offsets, "offsets"}}) {
    Graph g;
    const sparse_test::Bound b = sparse_test::build_for(g, *c, true);
    const auto rt = cpu_plan(g);
    sparse_test::set_inputs(*rt, b, *c);
    rt->execute(sparse_test::dyn_of(*c));
    try {
      (void)rt->get_f32(b.out);
      ADD_FAILURE() << "no error for " << want;
    } catch (const BadInputError& e) {
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace luminal
