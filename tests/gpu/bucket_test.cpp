// Dim buckets on the CUDA runtime: one DLRM runtime with a dynamic batch serves every batch of
// 1..16 from power-of-two buckets (each plan built once, on first use), visiting buckets up and
// down with poisoned buffers; every result matches PyTorch's outputs for those samples. Values
// outside every bucket, or a missing batch, are clear errors.
#include <gtest/gtest.h>

#include <cstdlib>

#include "gpu/gpu_test_util.h"
#include "luminal/cuda.h"
#include "luminal/nn.h"
#include "unit/dlrm/fixture_run.h"

namespace luminal {
namespace {

namespace fx = dlrm_fixture;
using cuda::CudaOptions;
using cuda::CudaRuntime;

class CudaBuckets : public gpu_test::CudaTest {};

struct BucketCase {
  const char* name;
  nn::SparsePath sparse;
  bool mega;    // build_dlrm_mega
  bool search;  // the search per bucket (plain ops: the DLRM rule's kernels are candidates)
};

void serve_every_batch(const BucketCase& bc) {
  SCOPED_TRACE(bc.name);
  const fx::Files f("tables8_bag3");
  nn::DlrmConfig c = fx::config(f, Precision::F32, /*jagged=*/true, bc.sparse);
  c.dynamic_batch = true;
  Graph g;
  const nn::DlrmGraph d = bc.mega ? nn::build_dlrm_mega(g, c) : nn::build_dlrm(g, c);
  CudaOptions o;
  o.buckets = {"batch", pow2_buckets(1, 16)};  // [1], [2], [3, 4], [5, 8], [9, 16]
  o.search.enabled = bc.search;
  o.search.max_candidates = 6;
  setenv("LUMINAL_CUDA_POISON", "1", 1);
  CudaRuntime rt(g, o);
  EXPECT_EQ(rt.active_bucket(), 4) << "no dim hint: weights load into the last bucket's plan";
  nn::load_dlrm_weights(rt, d, c, f.w);
  const std::vector<float> want = fx::expected(f);
  // Every bucket edge, up and down, and back to buckets already built.
  for (int64_t b : {16, 1, 4, 3, 5, 8, 9, 2, 16, 4, 1}) {
    SCOPED_TRACE(fmt::format("batch {}", b));
    rt.execute(fx::bind_prefix(rt, d, c, f, b));
    EXPECT_EQ(rt.active_bucket(), find_bucket(pow2_buckets(1, 16), b));
    gpu_test::expect_all_near(rt.get_f32(d.out), {want.begin(), want.begin() + b}, 1e-5, 1e-4,
                              bc.name);
  }
  EXPECT_EQ(rt.buckets_built(), 5) << "each bucket's plan is built once";
  unsetenv("LUMINAL_CUDA_POISON");

  DynMap dyn = fx::bind_prefix(rt, d, c, f, 4);
  dyn["batch"] = 17;
  gpu_test::expect_error([&] { rt.execute(dyn); },
                         {"[execute] batch = 17 is outside every bucket (1..16)"});
  dyn.erase("batch");
  gpu_test::expect_error([&] { rt.execute(dyn); },
                         {"[execute] dynamic dim 'batch' has no value in the DynMap"});
}

TEST_F(CudaBuckets, FusedDlrmServesEveryBatch) {
  serve_every_batch({"fused", nn::SparsePath::Fused, false, false});
}

TEST_F(CudaBuckets, MegakernelServesEveryBatch) {
  serve_every_batch({"mega", nn::SparsePath::Graph, true, false});
}

TEST_F(CudaBuckets, SearchedPlainOpDlrmServesEveryBatch) {
  serve_every_batch({"plain ops, searched per bucket", nn::SparsePath::Graph, false, true});
}

// A hint picks the bucket weights load into; that plan then runs without a switch.
TEST_F(CudaBuckets, TheDimHintPicksTheFirstPlan) {
  const fx::Files f("tables8_bag3");
  nn::DlrmConfig c = fx::config(f, Precision::F32, true, nn::SparsePath::Fused);
  c.dynamic_batch = true;
  Graph g;
  const nn::DlrmGraph d = nn::build_dlrm(g, c);
  CudaOptions o;
  o.buckets = {"batch", pow2_buckets(1, 16)};
  o.dim_hints["batch"] = 3;
  o.search.enabled = false;
  CudaRuntime rt(g, o);
  EXPECT_EQ(rt.active_bucket(), 2);
  nn::load_dlrm_weights(rt, d, c, f.w);
  rt.execute(fx::bind_prefix(rt, d, c, f, 4));
  EXPECT_EQ(rt.buckets_built(), 1);
  const std::vector<float> want = fx::expected(f);
  gpu_test::expect_all_near(rt.get_f32(d.out), {want.begin(), want.begin() + 4}, 1e-5, 1e-4,
                            "hinted bucket");
}

}  // namespace
}  // namespace luminal
