// The MlpChain kernel on the CUDA runtime (device machine only; outputs poisoned first): bf16 and
// f16, 64- and 32-row tiles, against the loop oracle and the CPU reference at DLRM-v2's top MLP, its
// cross net and top MLP as one chain, and at partial tiles, the captured graph replayed, and the batch changing between executes of one
// runtime (the workspace's counters must come back zero after every launch).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "custom/mlp_chain/test_util.h"
#include "gpu/gpu_test_util.h"
#include "luminal/compile.h"
#include "luminal/cuda.h"
#include "luminal/reference.h"

namespace luminal {
namespace {

namespace mt = mlp_chain_test;

class MlpChainGpu : public gpu_test::CudaTest {
 protected:
  void SetUp() override {
    gpu_test::CudaTest::SetUp();
    setenv("LUMINAL_CUDA_POISON", "1", 1);  // an unwritten output stays NaN-like garbage
  }
};

// Float accumulation and one rounding per layer beside the double oracle; the reference rounds per op.
double kernel_tol(DType dt) { return dt == DType::BF16 ? 1.5e-2 : 2e-3; }
double reference_tol(DType dt) { return dt == DType::BF16 ? 4e-2 : 6e-3; }

struct Chain {
  int64_t k;
  std::vector<int64_t> widths;
  std::vector<mt::ChainEpilogue> epi;
};
const Chain kTop{3456, {1024, 1024, 512, 256, 1}, mt::relus({true, true, true, true, false})};  // DLRM-v2's top MLP
const Chain kPartial{40, {72, 136, 1}, mt::relus({true, true, false})};
// DLRM-v2's cross net (3 layers of rank 512 over 3456) and top MLP as one chain.
const Chain kDenseTail = [] {
  auto [w, e] = mt::cross_then_top(3456, 3, 512, {1024, 1024, 512, 256, 1});
  return Chain{3456, w, e};
}();
const Chain kSmallCross = [] {
  auto [w, e] = mt::cross_then_top(40, 2, 16, {24, 1});
  return Chain{40, w, e};
}();

TEST_F(MlpChainGpu, MatchesLoopsAndReference) {
  uint32_t seed = 60;
  for (int tile_m : {64, 32})
    for (DType dt : {DType::BF16, DType::F16})
      for (const auto& [chain, m] : {std::pair{kPartial, int64_t{1}}, {kPartial, int64_t{70}}, {kTop, int64_t{270}},
                                     {kSmallCross, int64_t{70}}, {kDenseTail, int64_t{270}}}) {
        const mt::Case c = mt::random_chain_case(m, chain.k, chain.widths, chain.epi, dt, seed++);
        SCOPED_TRACE(fmt::format("m {} k {} layers {} {} tile {}", m, chain.k, chain.widths.size(), dtype_name(dt), tile_m));
        Graph g;
        const mt::Bound b = mt::build(g, c, /*dynamic=*/false, /*chain=*/true, tile_m);
        Executable rt(g, cuda::backend());
        const std::vector<double> want = mt::loops(c);
        for (int rep = 0; rep < 3; ++rep) {  // later executes replay the captured graph
          mt::set_inputs(rt, b, c);
          rt.execute();
          ASSERT_EQ(mt::mismatch(rt.get_f32(b.out), want, kernel_tol(dt), kernel_tol(dt)), "") << "rep " << rep;
        }
        EXPECT_EQ(rt.kernel_count(), 1u) << "the mlp_chain kernel, not the decomposition";
        if (m > 100) continue;  // the reference's matmuls at 270 x 3456 x 1024: the oracle is enough
        ReferenceRuntime ref(g);
        mt::set_inputs(ref, b, c);
        ref.execute();
        const std::vector<float> r = ref.get_f32(b.out);
        ASSERT_EQ(mt::mismatch(rt.get_f32(b.out), std::vector<double>(r.begin(), r.end()), reference_tol(dt),
                               reference_tol(dt)),
                  "")
            << "vs reference";
      }
}

TEST_F(MlpChainGpu, BatchChangesBetweenExecutes) {
  // k 264: never split; k 1536: the first layer split in 2 slices at small batches, not at 16384.
  for (int64_t k : {264, 1536})
    for (int tile_m : {64, 32}) {
      SCOPED_TRACE(fmt::format("k {} tile {}", k, tile_m));
      const mt::Case first = mt::random_case(37, k, {128, 64, 8}, {true, true, false}, DType::BF16, 5);
      Graph g;
      const mt::Bound b = mt::build(g, first, /*dynamic=*/true, /*chain=*/true, tile_m);
      Executable rt(g, cuda::backend());
      for (int64_t m : {37, 130, 1, 2048, 37, 16384, 270}) {
        const mt::Case c = mt::random_case(m, k, {128, 64, 8}, {true, true, false}, DType::BF16, uint32_t(m));
        mt::set_inputs(rt, b, c);
        rt.execute({{"m", m}});
        ASSERT_EQ(mt::mismatch(rt.get_f32(b.out), mt::loops(c), kernel_tol(DType::BF16), kernel_tol(DType::BF16)), "")
            << "batch " << m;
      }
      EXPECT_EQ(rt.kernel_count(), 1u);
    }
}

}  // namespace
}  // namespace luminal
