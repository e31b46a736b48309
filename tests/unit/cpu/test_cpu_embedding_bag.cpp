// EmbeddingBag's host kernel on the CPU backend (outputs poisoned first): every table dtype, index
// dtype and mode against the plain-loop oracle and the reference's decomposition, a dynamic nnz
// and batch served by one plan, and bad indices / offsets raising.
#include <gtest/gtest.h>

#include "cpu_test_util.h"

#include "custom/embedding_bag/test_util.h"
#include "luminal/compile.h"
#include "luminal/cpu.h"
#include "luminal/reference.h"

namespace luminal {
namespace {

using bag_test::Case;

using cpu_test::cpu_plan;

// c on the CPU backend (dynamic nnz and B): the host kernel runs, and matches the loops and the reference.
void expect_host_kernel_matches(const Case& c) {
  SCOPED_TRACE(c.describe());
  Graph g;
  const bag_test::Bound b = bag_test::build_for(g, c, true);
  const auto rt = cpu_plan(g);
  bag_test::set_inputs(*rt, b, c);
  rt->execute(bag_test::dyn_of(c));
  const std::vector<float> got = rt->get_f32(b.out);
  EXPECT_NE(rt->stats().steps.at(0).find("host kernel"), std::string::npos) << rt->stats().steps[0];
  EXPECT_EQ(bag_test::mismatch(got, bag_test::loops(c), 1e-5, bag_test::rtol_of(c.dtype)), "");
  ReferenceRuntime ref(g);
  bag_test::set_inputs(ref, b, c);
  ref.execute(bag_test::dyn_of(c));
  const std::vector<float> want = ref.get_f32(b.out);
  EXPECT_EQ(bag_test::mismatch(got, std::vector<double>(want.begin(), want.end()), 1e-5, bag_test::rtol_of(c.dtype)),
            "")
      << "vs reference";
}

TEST(CpuEmbeddingBag, HostKernelMatchesLoopsAndReference) {
  uint32_t seed = 10;
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (DType it : {DType::I32, DType::I64})
      for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
        for (int64_t d : {1, 7, 64}) expect_host_kernel_matches(bag_test::random_case(300, d, 29, mode, dt, it, seed++));
}

// Closed offsets [B + 1] inside a longer index list (a KeyedJaggedTensor key's bags).
TEST(CpuEmbeddingBag, ClosedOffsetsMatchLoopsAndReference) {
  uint32_t seed = 40;
  for (DType dt : {DType::F32, DType::BF16})
    for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
      for (int64_t batch : {1, 37}) {
        expect_host_kernel_matches(
            bag_test::closed_case(bag_test::random_case(200, 16, batch, mode, dt, DType::I64, seed), 9, 11, seed));
        ++seed;
      }
}

// per_sample_weights (a weighted KeyedJaggedTensor key's bags), open and closed offsets.
TEST(CpuEmbeddingBag, PerSampleWeightsMatchLoopsAndReference) {
  uint32_t seed = 70;
  for (DType dt : {DType::F32, DType::BF16, DType::F16})
    for (bool closed : {false, true}) {
      Case c = bag_test::random_case(200, 16, 37, nn::BagMode::Sum, dt, DType::I32, seed);
      if (closed) c = bag_test::closed_case(c, 9, 11, seed);
      expect_host_kernel_matches(bag_test::weighted(c, seed + 1));
      seed += 2;
    }
}

TEST(CpuEmbeddingBag, OnePlanServesEveryNnzAndBatch) {
  const Case first = bag_test::random_case(50, 8, 5, nn::BagMode::Sum, DType::F32, DType::I64, 1);
  Graph g;
  const bag_test::Bound b = bag_test::build_for(g, first, true);
  const auto rt = cpu_plan(g);
  for (int64_t batch : {5, 64, 1, 300}) {
    const Case c = bag_test::random_case(50, 8, batch, nn::BagMode::Sum, DType::F32, DType::I64, uint32_t(batch));
    bag_test::set_inputs(*rt, b, c);
    rt->execute(bag_test::dyn_of(c));
    EXPECT_EQ(bag_test::mismatch(rt->get_f32(b.out), bag_test::loops(c), 1e-5, 1e-6), "") << "batch " << batch;
  }
}

TEST(CpuEmbeddingBag, BadIndicesAndOffsetsRaiseAtTheNextRead) {
  Case bad_index = bag_test::random_case(40, 4, 9, nn::BagMode::Sum, DType::F32, DType::I32, 3);
  bad_index.indices.back() = 40;
  Case bad_offsets = bag_test::random_case(40, 4, 9, nn::BagMode::Sum, DType::F32, DType::I32, 4);
  bad_offsets.offsets[4] = bad_offsets.offsets[3] - 1;  // decreasing
  Case bad_end = bag_test::closed_case(bag_test::random_case(40, 4, 9, nn::BagMode::Sum, DType::F32, DType::I32, 5),
                                      2, 3, 5);
  bad_end.offsets.back() = int64_t(bad_end.indices.size()) + 1;  // the closing offset past nnz
  for (const auto& [c, want] : {std::pair{&bad_index, "out-of-range"}, std::pair{&bad_offsets, "offsets"},
                                std::pair{&bad_end, "offsets"}}) {
    Graph g;
    const bag_test::Bound b = bag_test::build_for(g, *c, true);
    const auto rt = cpu_plan(g);
    bag_test::set_inputs(*rt, b, *c);
    rt->execute(bag_test::dyn_of(*c));
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
