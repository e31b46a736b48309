// Dim buckets on the CUDA runtime: one DLRM runtime with a dynamic batch serves every batch of
// 1..16 from power-of-two buckets (each plan built once, on first use), visiting buckets up and
// down with poisoned buffers; every result matches PyTorch's outputs for those samples. Values
// outside every bucket, or a missing batch, are clear errors.
#include <gtest/gtest.h>

#include <cstdlib>

#include "cuda/runtime/device_memory.h"
#include "gpu/gpu_test_util.h"
#include "luminal/cuda.h"
#include "luminal/models/dlrm.h"
#include "luminal/nn.h"
#include "unit/dlrm/fixture_run.h"
#include "luminal/compile.h"
#include "gpu_options.h"

namespace luminal {
namespace {

namespace fx = dlrm_fixture;

class CudaBuckets : public gpu_test::CudaTest {};

struct BucketCase {
  const char* name;
  models::SparsePath sparse;
  bool mega;    // build_dlrm_mega
  bool search;  // the search per bucket (plain ops: the DLRM rule's kernels are candidates)
};

void serve_every_batch(const BucketCase& bc) {
  SCOPED_TRACE(bc.name);
  const fx::Files f("tables8_bag3");
  models::DlrmConfig c = fx::config(f, Precision::F32, /*jagged=*/true, bc.sparse);
  c.dynamic_batch = true;
  Graph g;
  const models::DlrmGraph d = bc.mega ? models::build_dlrm_mega(g, c) : models::build_dlrm(g, c);
  test::GpuOptions o;
  o.buckets = {"batch", pow2_buckets(1, 16)};  // [1], [2], [3, 4], [5, 8], [9, 16]
  o.search.enabled = bc.search;
  o.search.max_candidates = 6;
  o.cuda.poison = true;
  Executable rt(g, cuda::backend(o.cuda), o);
  EXPECT_EQ(rt.active_bucket(), 4) << "no dim hint: weights load into the last bucket's plan";
  models::load_dlrm_weights(rt, d, c, f.w);
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

  DynMap dyn = fx::bind_prefix(rt, d, c, f, 4);
  dyn["batch"] = 17;
  gpu_test::expect_error([&] { rt.execute(dyn); },
                         {"[execute] batch = 17 is outside every bucket (1..16)"});
  dyn.erase("batch");
  gpu_test::expect_error([&] { rt.execute(dyn); },
                         {"[execute] dynamic dim 'batch' has no value in the DynMap"});
}

TEST_F(CudaBuckets, FusedDlrmServesEveryBatch) {
  serve_every_batch({"fused", models::SparsePath::Fused, false, false});
}

TEST_F(CudaBuckets, MegakernelServesEveryBatch) {
  serve_every_batch({"mega", models::SparsePath::Graph, true, false});
}

TEST_F(CudaBuckets, SearchedPlainOpDlrmServesEveryBatch) {
  serve_every_batch({"plain ops, searched per bucket", models::SparsePath::Graph, false, true});
}

// A hint picks the bucket weights load into; that plan then runs without a switch.
TEST_F(CudaBuckets, TheDimHintPicksTheFirstPlan) {
  const fx::Files f("tables8_bag3");
  models::DlrmConfig c = fx::config(f, Precision::F32, true, models::SparsePath::Fused);
  c.dynamic_batch = true;
  Graph g;
  const models::DlrmGraph d = models::build_dlrm(g, c);
  test::GpuOptions o;
  o.buckets = {"batch", pow2_buckets(1, 16)};
  o.dim_hints["batch"] = 3;
  o.search.enabled = false;
  Executable rt(g, cuda::backend(o.cuda), o);
  EXPECT_EQ(rt.active_bucket(), 2);
  models::load_dlrm_weights(rt, d, c, f.w);
  rt.execute(fx::bind_prefix(rt, d, c, f, 4));
  EXPECT_EQ(rt.buckets_built(), 1);
  const std::vector<float> want = fx::expected(f);
  gpu_test::expect_all_near(rt.get_f32(d.out), {want.begin(), want.begin() + 4}, 1e-5, 1e-4,
                            "hinted bucket");
}

// The runtime contract across bucket switches: staged (non-persisted) inputs bound before an
// execute move to the bucket's plan and are consumed there; an output bound to the caller's memory
// each call lands there whichever plan runs; work runs on the caller's stream (the legacy default
// stream here: host reads after it see the result).
TEST_F(CudaBuckets, StagedInputsExternalOutputsAndTheCallersStreamFollowTheBucket) {
  Graph g;
  const Expr n = Expr::sym("n");
  const GraphTensor x = g.named_tensor("x", {n, 16});
  const GraphTensor w = g.named_tensor("w", {16, 8}).persist();
  const GraphTensor y = (x.matmul(w).relu() * 2.0).output();
  test::GpuOptions o;
  o.buckets = {"n", pow2_buckets(1, 64)};
  o.search.enabled = false;
  Executable rt(g, cuda::backend(o.cuda), o);
  const std::vector<float> wv = gpu_test::spread(16 * 8, -1, 1, 3);
  rt.set_data(w, std::span<const float>(wv));
  rt.set_stream(nullptr);
  cuda::DeviceMemory out(64 * 8 * sizeof(float));
  for (int64_t rows : {64, 3, 17, 3, 64, 1, 33}) {
    SCOPED_TRACE(fmt::format("n = {}", rows));
    const std::vector<float> xv = gpu_test::spread(size_t(rows * 16), -1, 1, unsigned(rows));
    std::vector<float> want(size_t(rows * 8));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < 8; ++c) {
        double acc = 0;
        for (int64_t k = 0; k < 16; ++k) acc += double(xv[size_t(r * 16 + k)]) * wv[size_t(k * 8 + c)];
        want[size_t(r * 8 + c)] = float(2.0 * std::max(acc, 0.0));
      }
    rt.set_data(x, std::span<const float>(xv));
    const size_t bytes = size_t(rows * 8) * sizeof(float);
    rt.set_output_ptr(y, out.get(), bytes);
    rt.execute({{"n", rows}});
    std::vector<float> got(size_t(rows * 8));
    out.download(got.data(), bytes);  // the legacy stream: ordered after the execute's work
    gpu_test::expect_all_near(got, want, 1e-5, 1e-4, "in the caller's memory");
    gpu_test::expect_all_near(rt.get_f32(y), want, 1e-5, 1e-4, "get reads it back");
    EXPECT_EQ(rt.active_bucket(), find_bucket(pow2_buckets(1, 64), rows));
    gpu_test::expect_error([&] { rt.execute({{"n", rows}}); }, {"'x' has no data"});
  }
}

}  // namespace
}  // namespace luminal
