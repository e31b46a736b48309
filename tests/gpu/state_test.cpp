// States (output_into) on the CUDA runtime, against the CPU reference over several steps: a
// scatter-written cache (in place, with a same-step reader), a cache that an earlier node also
// reads (copied), and a general next value; with and without CUDA graphs; the cache is never
// consumed and survives a remove_buffer / set_buffer round trip.
#include <gtest/gtest.h>

#include "gpu/gpu_test_util.h"
#include "luminal/reference.h"
#include "luminal/cuda.h"
#include "luminal/nn.h"
#include "luminal/compile.h"
#include "gpu_options.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace luminal {
namespace {

using Floats = std::vector<float>;

class CudaState : public gpu_test::CudaTest {};

struct CacheGraph {
  Graph g;
  GraphTensor cache, pos, rows, total, before, x, seen;
  explicit CacheGraph(bool old_reader) {
    cache = g.named_tensor("cache", {16, 3});
    pos = g.named_tensor("pos", {Expr::sym("s")}, DType::I32);
    rows = g.named_tensor("rows", {Expr::sym("s"), 3});
    if (old_reader) before = cache.sum(0).output();
    GraphTensor next = cache.scatter(pos, rows);
    total = (next * next).sum(0).output();
    next.output_into(cache);
    x = g.named_tensor("x", {5});
    seen = (x * 2.0).output();
    (x * 0.5 + 1.0).output_into(x);
  }
};

// Step i feeds rows at positions {2i, 2i + 1} (i = 0: three rows); returns every output per step.
std::vector<Floats> run_steps(CacheGraph& m, Runtime& rt, bool old_reader) {
  rt.set_data(m.cache, std::span<const float>(gpu_test::spread(48, -1, 1, 3)));
  rt.set_data(m.x, std::span<const float>(gpu_test::spread(5, 0.5, 2, 4)));
  std::vector<Floats> got;
  for (int step = 0; step < 4; ++step) {
    std::vector<int32_t> pos = step == 0 ? std::vector<int32_t>{0, 1, 2}
                                         : std::vector<int32_t>{2 * step + 1, 2 * step + 2};
    const Floats rows = gpu_test::spread(pos.size() * 3, 0.25, 3, 10 + step);
    rt.set_data(m.pos, std::span<const int32_t>(pos));
    rt.set_data(m.rows, std::span<const float>(rows));
    rt.execute({{"s", int64_t(pos.size())}});
    got.push_back(rt.get_f32(m.total));
    got.push_back(rt.get_f32(m.seen));
    if (old_reader) got.push_back(rt.get_f32(m.before));
  }
  return got;
}

TEST_F(CudaState, NextValuesMatchTheReferenceStepByStep) {
  for (bool old_reader : {false, true}) {
    for (bool graphs : {true, false}) {
      CacheGraph ref_graph(old_reader), gpu_graph(old_reader);
      ReferenceRuntime cpu(ref_graph.g);
      test::GpuOptions o;
      o.cuda.cuda_graph = graphs;
      Executable gpu(gpu_graph.g, cuda::backend(o.cuda), o);
      const std::vector<Floats> want = run_steps(ref_graph, cpu, old_reader);
      const std::vector<Floats> got = run_steps(gpu_graph, gpu, old_reader);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i)
        gpu_test::expect_all_near(got[i], want[i], 1e-5, 1e-5,
                                  fmt::format("old_reader {} graphs {} result {}", old_reader,
                                              graphs, i));
    }
  }
}

TEST_F(CudaState, TheCacheIsNotConsumedAndSurvivesARoundTrip) {
  CacheGraph ref_graph(false), gpu_graph(false);
  ReferenceRuntime cpu(ref_graph.g);
  Executable gpu(gpu_graph.g, cuda::backend());
  run_steps(ref_graph, cpu, false);
  run_steps(gpu_graph, gpu, false);
  // Two more steps without set_data on the cache (it is persisted), the second after moving the
  // cache out and back in (remove_buffer / set_buffer).
  for (int step = 0; step < 2; ++step) {
    std::vector<Floats> got;
    for (auto [m, rt] : {std::pair<CacheGraph*, Runtime*>{&ref_graph, &cpu}, {&gpu_graph, &gpu}}) {
      if (step == 1) rt->set_buffer(m->cache, rt->remove_buffer(m->cache));
      rt->set_data(m->pos, std::span<const int32_t>(std::vector<int32_t>{15 - step}));
      rt->set_data(m->rows, std::span<const float>(Floats{1.5f, -2, 3}));
      rt->execute({{"s", 1}});
      got.push_back(rt->get_f32(m->total));
    }
    gpu_test::expect_all_near(got[1], got[0], 1e-5, 1e-5, fmt::format("extra step {}", step));
  }
}

// A graph with states is not searched, but it runs its default candidate, the rewrite rules' first
// available alternatives: an RMSNorm over a running state becomes the fused custom op (the rule
// report says so before the first run, search_report().choices after it), and its values still
// follow the CPU reference step by step; alternative = "none" keeps the graph as built.
TEST_F(CudaState, AStateGraphTakesTheRulesDefaultChoices) {
  for (bool rules : {true, false}) {
    Graph g;
    GraphTensor h = g.named_tensor("h", {2, 64});
    GraphTensor w = g.named_tensor("w", {64}).persist();
    GraphTensor y = nn::rms_norm(h, w, 1e-5).output();
    (h + y * 0.25).output_into(h);
    test::GpuOptions opts;
    opts.alternative = rules ? "auto" : "none";
    Executable gpu(g, cuda::backend(opts.cuda), opts);
    ReferenceRuntime cpu(g);
    ASSERT_EQ(gpu.rule_report().size(), 1u);
    EXPECT_EQ(gpu.rule_report()[0].find("-> fused") != std::string::npos, rules) << gpu.rule_report()[0];
    for (Runtime* rt : {static_cast<Runtime*>(&gpu), static_cast<Runtime*>(&cpu)}) {
      rt->set_data(h, std::span<const float>(gpu_test::spread(128, -2, 2, 5)));
      rt->set_data(w, std::span<const float>(gpu_test::spread(64, 0.5, 1.5, 6)));
    }
    for (int step = 0; step < 3; ++step) {
      gpu.execute();
      cpu.execute();
      gpu_test::expect_all_near(gpu.get_f32(y), cpu.get_f32(y), 1e-5, 1e-5,
                                fmt::format("rules {} step {}", rules, step));
    }
    EXPECT_FALSE(gpu.search_report().ran) << "a graph with states is not searched";
    bool fused = false;
    for (const std::string& c : gpu.search_report().choices)
      fused = fused || (c.find("rms_norm") != std::string::npos && c.find("= fused") != std::string::npos);
    EXPECT_EQ(fused, rules) << fmt::format("choices: {}", fmt::join(gpu.search_report().choices, "; "));
  }
}

}  // namespace
}  // namespace luminal
