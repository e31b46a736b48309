// The CausalAttention kernel on the CUDA runtime (device machine only; outputs poisoned first):
// decode and prefill shapes at Llama 3.2 1B's heads, f32 and bf16, against the plain-loop oracle
// and the CPU reference; a q_pos outside the cache raises.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "custom/attention/test_util.h"
#include "gpu/gpu_test_util.h"
#include "luminal/reference.h"
#include "luminal/cuda.h"
#include "luminal/compile.h"

namespace luminal {
namespace {

using attention_test::Case;

class CausalAttentionGpu : public gpu_test::CudaTest {
 protected:
  void SetUp() override {
    gpu_test::CudaTest::SetUp();
    setenv("LUMINAL_CUDA_POISON", "1", 1);
  }
};

// got vs the double-precision oracle.
void expect_oracle(const Case& c, const std::vector<float>& got) {
  const std::vector<double> want = attention_test::loops(c);
  const double tol = c.dtype == DType::BF16 ? 1.0 / 64 : 1e-4;
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_TRUE(std::abs(got[i] - want[i]) <= tol * (1 + std::abs(want[i])))
        << "element " << i << ": got " << got[i] << ", want " << want[i];
}

void check(const Case& c) {
  SCOPED_TRACE(fmt::format("s {} t {} H {} KV {} d {} {}", c.s, c.t, c.heads, c.kv_heads, c.dim,
                           dtype_name(c.dtype)));
  Graph g;
  const attention_test::Bound b = attention_test::build(g, c, true);
  Executable rt(g, cuda::backend());
  std::vector<float> got;
  for (int rep = 0; rep < 2; ++rep) {  // the second execute replays the captured graph
    attention_test::set_inputs(rt, b, c);
    rt.execute();
    got = rt.get_f32(b.out);
  }
  EXPECT_EQ(rt.kernel_count(), 1u) << "the fused kernel, not the decomposition";
  expect_oracle(c, got);
  // The reference runtime materializes the [s, H, t, d] products: only small cases (a prefill at
  // 512 x 640 took minutes on the CPU); the oracle above covers the large ones.
  if (c.s * c.t * c.heads * c.dim > (int64_t(1) << 24)) return;
  Graph gc;
  const attention_test::Bound bc = attention_test::build(gc, c, false);
  ReferenceRuntime cpu(gc);
  attention_test::set_inputs(cpu, bc, c);
  cpu.execute();
  const std::vector<float> ref = cpu.get_f32(bc.out);
  const double ctol = c.dtype == DType::BF16 ? 3e-2 : 1e-4;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_TRUE(std::abs(got[i] - ref[i]) <= ctol * (1 + std::abs(ref[i])))
        << "element " << i << " vs cpu: got " << got[i] << ", cpu " << ref[i];
}

TEST_F(CausalAttentionGpu, DecodeMatchesOracle) {
  for (DType dt : {DType::F32, DType::BF16}) {
    check({1, 640, 32, 8, 64, dt, {300}, 21});
    check({1, 640, 32, 8, 64, dt, {0}, 22});    // one visible key
    check({1, 640, 32, 8, 64, dt, {639}, 23});  // the whole cache
    check({1, 300, 32, 8, 128, dt, {170}, 24});
    check({1, 64, 8, 1, 64, dt, {40}, 25});  // group 8
  }
}

// Decode steps replaying one captured graph at moving positions: the split kernel's block counters
// must be back at zero after every launch, or a later step would merge too early or never.
TEST_F(CausalAttentionGpu, DecodeStepsReuseTheWorkspace) {
  for (DType dt : {DType::F32, DType::BF16}) {
    Case c{1, 640, 32, 8, 64, dt, {0}, 51};
    ASSERT_GT(custom::attention_splits(c.s, c.kv_heads, c.t, cuda::backend()->caps().sm_count), 1) << "the case must split";
    Graph g;
    const attention_test::Bound b = attention_test::build(g, c, true);
    Executable rt(g, cuda::backend());
    for (int32_t p : {511, 512, 0, 31, 32, 639, 100, 100}) {
      SCOPED_TRACE(fmt::format("{} position {}", dtype_name(dt), p));
      c.pos = {p};
      attention_test::set_inputs(rt, b, c);
      rt.execute();
      expect_oracle(c, rt.get_f32(b.out));
    }
  }
}

TEST_F(CausalAttentionGpu, PrefillMatchesOracle) {
  for (DType dt : {DType::F32, DType::BF16}) {
    check({512, 640, 32, 8, 64, dt, attention_test::positions(512, 512), 31});
    check({7, 33, 4, 4, 128, dt, {32, 0, 5, 9, 31, 1, 16}, 32});
  }
}

TEST_F(CausalAttentionGpu, PositionOutsideCacheRaises) {
  const Case c{2, 16, 8, 2, 64, DType::F32, {3, 16}, 41};
  Graph g;
  const attention_test::Bound b = attention_test::build(g, c, true);
  Executable rt(g, cuda::backend());
  attention_test::set_inputs(rt, b, c);
  EXPECT_ANY_THROW({
    rt.execute();
    rt.get_f32(b.out);
  });
}

}  // namespace
}  // namespace luminal
