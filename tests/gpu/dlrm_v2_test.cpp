// DLRM-v2 (DCNv2 cross layers, multi-hot jagged bags) end to end on the CUDA runtime (device
// machine only): the dlrm-v2-small preset with seeded weights at fp32 and bf16 over the graph, fused
// (one BagConcat writing x0) and split (the bags beside the bottom MLP, then x0's concat) sparse
// paths, captured over 4 streams, and with the MLPs and cross net as MlpChain kernels, against the
// CPU reference runtime's graph path at the same precision; outputs poisoned. Split must really run
// on more than one stream.
#include <algorithm>
#include <random>
#include <span>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "gpu/gpu_test_util.h"
#include "gpu_options.h"
#include "luminal/compile.h"
#include "luminal/cuda.h"
#include "luminal/models/dlrm.h"
#include "luminal/reference.h"
#include "unit/dlrm/fixture_run.h"

namespace luminal {
namespace {

namespace fx = dlrm_fixture;

// Random inputs for c at `batch`: dense features in [-1, 1), per table a bag of 0 .. 2 * hot ids
// (empty bags included) and its offsets.
struct Inputs {
  std::vector<float> dense;
  std::vector<std::vector<int64_t>> indices, offsets;
};

Inputs random_inputs(const models::DlrmConfig& c, const std::vector<int64_t>& hots, int64_t batch, uint32_t seed) {
  std::mt19937 rng(seed);
  Inputs in;
  std::uniform_real_distribution<float> u(-1, 1);
  for (int64_t i = 0; i < batch * c.ln_bot[0]; ++i) in.dense.push_back(u(rng));
  for (size_t k = 0; k < c.ln_emb.size(); ++k) {
    std::vector<int64_t> idx, off;
    for (int64_t b = 0; b < batch; ++b) {
      off.push_back(int64_t(idx.size()));
      const int64_t len = std::uniform_int_distribution<int64_t>(0, 2 * hots[k])(rng);
      for (int64_t j = 0; j < len; ++j) idx.push_back(std::uniform_int_distribution<int64_t>(0, c.ln_emb[k] - 1)(rng));
    }
    if (idx.empty()) idx.push_back(0);  // a 0-length input is not bindable; no bag reads it
    in.indices.push_back(std::move(idx));
    in.offsets.push_back(std::move(off));
  }
  return in;
}

// Seeded weights, the inputs bound; executes and returns the logits.
std::vector<float> run(Runtime& rt, const models::DlrmGraph& g, const models::DlrmConfig& c, const Inputs& in) {
  models::load_synthetic_weights(rt, g, c, /*seed=*/11);
  rt.set_data(g.dense_x, std::span<const float>(in.dense));
  DynMap dyn;
  for (size_t k = 0; k < g.indices.size(); ++k) {
    fx::bind_ints(rt, g.indices[k], in.indices[k]);
    fx::bind_ints(rt, g.offsets[k], in.offsets[k]);
    dyn[models::DlrmConfig::nnz_name(int64_t(k))] = int64_t(in.indices[k].size());
  }
  rt.execute(dyn);
  return rt.get_f32(g.out);
}

class DlrmV2Gpu : public gpu_test::CudaTest {};

TEST_F(DlrmV2Gpu, SparsePathsMatchCpuReference) {
  const int64_t batch = 96;
  const models::DlrmConfig base = models::dlrm_v2_preset("dlrm-v2-small", 0, batch);
  const Inputs in = random_inputs(base, models::dlrm_v2_hots("dlrm-v2-small"), batch, 5);
  for (Precision p : {Precision::F32, Precision::BF16}) {
    // The CPU reference at the same precision (bf16 rounds between layers there too; the GPU plan
    // may round less, inside fused epilogues).
    models::DlrmConfig ref_c = base;
    ref_c.precision = p;
    Graph ref_g;
    const models::DlrmGraph ref_dg = models::build_dlrm(ref_g, ref_c);
    ReferenceRuntime cpu(ref_g);
    const std::vector<float> want = run(cpu, ref_dg, ref_c, in);
    for (models::SparsePath path : {models::SparsePath::Graph, models::SparsePath::Fused, models::SparsePath::Split}) {
      SCOPED_TRACE(fmt::format("{} sparse {}", precision_name(p), models::sparse_path_name(path)));
      models::DlrmConfig c = ref_c;
      c.sparse = path;
      Graph g;
      const models::DlrmGraph dg = models::build_dlrm(g, c);
      test::GpuOptions opts;
      opts.cuda.poison = true;
      opts.cuda.graph_branches = 4;
      Executable rt(g, cuda::backend(opts.cuda), opts);
      for (int rep = 0; rep < 2; ++rep) {  // the second execute replays the captured graph
        const std::vector<float> got = run(rt, dg, c, in);
        // bf16: the CPU backend lands within 1e-3 of the same reference (its logits tie at bf16's
        // resolution, so ranks are no sharper a check than this).
        EXPECT_LE(fx::max_abs_diff(got, want), p == Precision::F32 ? 1e-4 : 2e-2) << "rep " << rep;
      }
      const PlanStats s = rt.stats();
      const auto streams = s.counters.find("graph_streams");
      ASSERT_NE(streams, s.counters.end());
      if (path == models::SparsePath::Split)
        EXPECT_GE(streams->second, 2) << "the bags kernel beside the bottom MLP";
    }
  }
}

// The dense tail (both cross layers and the top MLP) and the bottom MLP's tail as MlpChain kernels
// (the mlp_chain rule's alternatives, forced by candidate), bf16, against the CPU reference at bf16.
TEST_F(DlrmV2Gpu, MlpChainsMatchCpuReference) {
  const int64_t batch = 96;
  models::DlrmConfig c = models::dlrm_v2_preset("dlrm-v2-small", 0, batch);
  c.precision = Precision::BF16;
  const Inputs in = random_inputs(c, models::dlrm_v2_hots("dlrm-v2-small"), batch, 6);
  Graph ref_g;
  const models::DlrmGraph ref_dg = models::build_dlrm(ref_g, c);
  ReferenceRuntime cpu(ref_g);
  const std::vector<float> want = run(cpu, ref_dg, c, in);
  for (const char* alt : {"chain", "chain_m32"}) {
    SCOPED_TRACE(alt);
    Graph g;
    const models::DlrmGraph dg = models::build_dlrm(g, c);
    test::GpuOptions opts;
    opts.cuda.poison = true;
    opts.alternative = alt;  // every mlp_chain match takes it; the other rules keep their graphs
    Executable rt(g, cuda::backend(opts.cuda), opts);
    for (int rep = 0; rep < 2; ++rep)  // the second execute replays the captured graph
      EXPECT_LE(fx::max_abs_diff(run(rt, dg, c, in), want), 2e-2) << "rep " << rep;
    size_t chained = 0;
    for (const std::string& line : rt.rule_report())
      chained += line.starts_with("mlp_chain:") && line.find(std::string("-> ") + alt) != std::string::npos;
    EXPECT_GE(chained, 1u) << "the cross net and top MLP as one chain";
  }
}

}  // namespace
}  // namespace luminal
