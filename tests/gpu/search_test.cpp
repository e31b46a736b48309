// The search on the CUDA runtime: every candidate of random graphs agrees with the reference; a
// searched runtime computes what the reference does, keeps the runtime contract (consumed inputs,
// external outputs), reuses the plan cache and survives a corrupt entry; a DLRM built from plain
// nn ops gets the megakernel at the seed shape.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "gpu/gpu_test_util.h"
#include "luminal/reference.h"
#include "luminal/cuda.h"
#include "luminal/models/dlrm.h"
#include "luminal/nn.h"
#include "search_graphs.h"
#include "luminal/compile.h"
#include "gpu_options.h"

namespace luminal {
namespace {


class CudaSearch : public gpu_test::CudaTest {
 protected:
  void SetUp() override {
    gpu_test::CudaTest::SetUp();
    dir_ = std::filesystem::temp_directory_path() / ("luminal_search_" + std::to_string(getpid()));
    std::filesystem::remove_all(dir_);
    setenv("LUMINAL_CACHE_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    unsetenv("LUMINAL_CACHE_DIR");
    std::filesystem::remove_all(dir_);
  }
  std::filesystem::path dir_;
};

std::vector<std::vector<float>> run(Runtime& rt, test::RandomGraph& r, unsigned seed) {
  for (size_t i = 0; i < r.inputs.size(); ++i) {
    const size_t n = size_t(r.inputs[i].view.numel().as_const().value());
    const float span = i == 0 ? 1.0f : 0.2f;
    const std::vector<float> v = gpu_test::spread(n, -span, span, seed + unsigned(i));
    rt.set_data(r.inputs[i], std::span<const float>(v));
  }
  rt.execute();
  std::vector<std::vector<float>> out;
  for (const GraphTensor& o : r.outputs) out.push_back(rt.get_f32(o));
  return out;
}

TEST_F(CudaSearch, EveryCandidateOfRandomGraphsMatchesTheReference) {
  int tried = 0;
  for (unsigned seed = 1; seed <= 8; ++seed) {
    auto r = test::random_graph(seed);
    ReferenceRuntime cpu(r->g);
    const auto want = run(cpu, *r, seed);
    for (const auto& c : test::candidates_to_try(test::all_lowering_points(r->g), 3, seed)) {
      test::GpuOptions o;
      o.candidate = c.to_string();
      o.cuda.poison = true;
      Executable rt(r->g, cuda::backend(o.cuda), o);
      const auto got = run(rt, *r, seed);
      for (size_t i = 0; i < got.size(); ++i)
        gpu_test::expect_all_near(got[i], want[i], 1e-4, 1e-3,
                                  "seed " + std::to_string(seed) + " " + c.to_string());
      EXPECT_EQ(rt.search_report().candidate, c.to_string());
      ++tried;
    }
  }
  EXPECT_GT(tried, 40);
}

// Per-candidate limits: with a zero compile limit or a run limit below any real plan's time, every
// candidate but the heuristic plan is discarded as timed out, and the heuristic plan runs.
TEST_F(CudaSearch, CandidatesOverTheirLimitsAreDiscardedAsTimedOut) {
  auto r = test::random_graph(3);
  ReferenceRuntime cpu(r->g);
  const auto want = run(cpu, *r, 7);
  for (bool compile_limit : {true, false}) {
    SCOPED_TRACE(compile_limit ? "compile limit 0 s" : "run limit 1e-6 x the heuristic plan");
    test::GpuOptions o;
    o.search.enabled = true;
    o.search.force = true;  // no plan cache
    o.search.max_candidates = 6;
    if (compile_limit) o.search.compile_timeout_s = 0;
    else o.search.run_timeout_factor = 1e-6;
    Executable rt(r->g, cuda::backend(o.cuda), o);
    const auto got = run(rt, *r, 7);
    for (size_t i = 0; i < got.size(); ++i)
      gpu_test::expect_all_near(got[i], want[i], 1e-4, 1e-3, "heuristic after time-outs");
    const SearchReport& rep = rt.search_report();
    ASSERT_GE(rep.candidates, 3);
    EXPECT_EQ(rep.discarded, rep.candidates - 1) << "all but the heuristic plan";
    EXPECT_EQ(rep.candidate, "") << "the heuristic plan won";
  }
}

TEST_F(CudaSearch, SearchedPlanMatchesTheReferenceAndTheCacheServesTheSecondCompile) {
  auto r = test::random_graph(3);
  ReferenceRuntime cpu(r->g);
  const auto want = run(cpu, *r, 7);
  test::GpuOptions o;
  o.search.enabled = true;  // whatever LUMINAL_SEARCH says for the rest of the suite
  o.search.max_candidates = 12;
  Executable first(r->g, cuda::backend(o.cuda), o);
  const auto got = run(first, *r, 7);
  for (size_t i = 0; i < got.size(); ++i) gpu_test::expect_all_near(got[i], want[i], 1e-4, 1e-3, "searched");
  const SearchReport& a = first.search_report();
  EXPECT_TRUE(a.ran);
  EXPECT_FALSE(a.from_cache);
  EXPECT_GE(a.candidates, 2);
  EXPECT_GT(a.us, 0);
  EXPECT_FALSE(a.choices.empty());
  // Consumed-input semantics hold after the search: x (not persisted) needs new data.
  gpu_test::expect_error([&] { first.execute(); }, {"has no data"});

  Executable second(r->g, cuda::backend(o.cuda), o);
  run(second, *r, 7);
  EXPECT_TRUE(second.search_report().from_cache);
  EXPECT_EQ(second.search_report().candidate, a.candidate);
  EXPECT_EQ(second.search_report().candidates, 1);

  // A corrupt entry is ignored (searched again) and rewritten.
  size_t entries = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir_))
    if (e.is_regular_file() && e.path().extension() == ".json") {
      std::ofstream(e.path()) << "{ not json";
      ++entries;
    }
  ASSERT_EQ(entries, 1u);
  Executable third(r->g, cuda::backend(o.cuda), o);
  const auto again = run(third, *r, 7);
  EXPECT_FALSE(third.search_report().from_cache);
  for (size_t i = 0; i < again.size(); ++i) gpu_test::expect_all_near(again[i], want[i], 1e-4, 1e-3, "re-searched");
  Executable fourth(r->g, cuda::backend(o.cuda), o);
  run(fourth, *r, 7);
  EXPECT_TRUE(fourth.search_report().from_cache);
}

TEST_F(CudaSearch, NoSearchKeepsTheHeuristicPlan) {
  auto r = test::random_graph(5);
  test::GpuOptions o;
  o.search.enabled = false;
  Executable rt(r->g, cuda::backend(o.cuda), o);
  run(rt, *r, 1);
  EXPECT_FALSE(rt.search_report().ran);
}

TEST_F(CudaSearch, DlrmFromPlainOpsGetsTheMegakernelAtTheSeedShape) {
  models::DlrmConfig c;
  c.ln_bot = {13, 8, 4};
  c.ln_emb = {10, 20, 30};
  c.ln_top = {10, 8, 1};
  c.batch = 2048;
  c.jagged = true;
  c.sparse = models::SparsePath::Graph;
  Graph g;
  models::DlrmGraph d = models::build_dlrm(g, c);
  auto bind = [&](Runtime& rt) {
    unsigned s = 1;
    auto fill = [&](const GraphTensor& t, float lo, float hi) {
      const auto v = gpu_test::spread(size_t(t.view.numel().as_const().value()), lo, hi, s++);
      rt.set_data(t, std::span<const float>(v));
    };
    fill(d.dense_x, 0, 1);
    for (const GraphTensor& t : d.inputs.tables) fill(t, -0.5f, 0.5f);
    for (const auto* ws : {&d.inputs.bot_w, &d.inputs.bot_b, &d.inputs.top_w, &d.inputs.top_b})
      for (const GraphTensor& t : *ws) fill(t, -0.4f, 0.4f);
    DynMap dyn;
    for (size_t k = 0; k < c.ln_emb.size(); ++k) {
      std::vector<int32_t> idx(size_t(c.batch) * 2), off(size_t(c.batch));
      for (size_t i = 0; i < idx.size(); ++i) idx[i] = int32_t((i * 7 + k) % size_t(c.ln_emb[k]));
      for (size_t b = 0; b < off.size(); ++b) off[b] = int32_t(2 * b);
      rt.set_data(d.indices[k], std::span<const int32_t>(idx));
      rt.set_data(d.offsets[k], std::span<const int32_t>(off));
      dyn[models::DlrmConfig::nnz_name(int64_t(k))] = int64_t(idx.size());
    }
    rt.execute(dyn);
    return rt.get_f32(d.out);
  };
  ReferenceRuntime cpu(g);
  const auto want = bind(cpu);
  test::GpuOptions o;
  o.search.enabled = true;
  o.search.max_candidates = 16;
  Executable rt(g, cuda::backend(o.cuda), o);
  const auto got = bind(rt);
  gpu_test::expect_all_near(got, want, 1e-5, 1e-4, "searched DLRM");
  const SearchReport& rep = rt.search_report();
  // The megakernel is the rule's default choice; the search keeps it unless a candidate is faster.
  ASSERT_EQ(rt.rule_report().size(), 1u);
  EXPECT_NE(rt.rule_report()[0].find("-> mega"), std::string::npos)
      << rt.rule_report()[0] << "; winner '" << rep.candidate << "' " << rep.us << " us, default "
      << rep.heuristic_us << " us";
  EXPECT_EQ(rt.kernel_count(), 1u);
}

}  // namespace
}  // namespace luminal
