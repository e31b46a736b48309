// DLRM with a dynamic batch (DlrmConfig::dynamic_batch) on the CPU reference runtime: one runtime
// re-executed at several batches (the fixtures' first b samples) gives, at each, exactly what a
// model built for that batch gives and PyTorch's outputs for those samples; every sparse path, the
// megakernel's decomposition, and the DLRM rule's alternatives on a plain-op dynamic graph.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "compiler/rules/rules.h"
#include "expect_error.h"
#include "luminal/reference.h"
#include "unit/dlrm/fixture_run.h"
#include "luminal/models/dlrm.h"

namespace luminal {
namespace {

namespace fx = dlrm_fixture;
namespace rules = compiler::rules;

constexpr double kTol = 2e-5;  // fp32 vs PyTorch fp32, as the fixture tests

// The output for the first b samples from a model built for exactly batch b.
std::vector<float> static_run(models::DlrmConfig c, bool mega, const fx::Files& f, int64_t b) {
  c.batch = b;
  c.dynamic_batch = false;
  Graph g;
  const models::DlrmGraph d = mega ? models::build_dlrm_mega(g, c) : models::build_dlrm(g, c);
  ReferenceRuntime rt(g);
  models::load_dlrm_weights(rt, d, c, f.w);
  rt.execute(fx::bind_prefix(rt, d, c, f, b));
  return rt.get_f32(d.out);
}

std::vector<float> head(const std::vector<float>& v, int64_t b) { return {v.begin(), v.begin() + b}; }

struct PathCase {
  const char* fixture;
  bool jagged;
  models::SparsePath sparse;
  bool mega;
  Precision precision;
};

class DynamicBatch : public ::testing::TestWithParam<PathCase> {};

TEST_P(DynamicBatch, OneRuntimeServesEveryBatchLikeAModelBuiltForIt) {
  const PathCase& pc = GetParam();
  const fx::Files f(pc.fixture);
  models::DlrmConfig c = fx::config(f, pc.precision, pc.jagged, pc.sparse);
  const int64_t full = c.batch;
  c.dynamic_batch = true;
  Graph g;
  const models::DlrmGraph d = pc.mega ? models::build_dlrm_mega(g, c) : models::build_dlrm(g, c);
  ASSERT_TRUE(d.dense_x.dims()[0].same(Expr::sym("batch")));
  ReferenceRuntime rt(g);
  models::load_dlrm_weights(rt, d, c, f.w);
  const std::vector<float> want = fx::expected(f);
  // Up, down and up again: nothing of an earlier batch may leak into a later one.
  for (int64_t b : {full, int64_t{1}, full / 2 + 1, int64_t{2}, full}) {
    SCOPED_TRACE(fmt::format("{} batch {}", pc.fixture, b));
    rt.execute(fx::bind_prefix(rt, d, c, f, b));
    const std::vector<float> got = rt.get_f32(d.out);
    ASSERT_EQ(got.size(), size_t(b));
    EXPECT_EQ(got, static_run(c, pc.mega, f, b)) << "the dynamic graph computes what the static one does";
    if (pc.precision == Precision::F32) EXPECT_LE(fx::max_abs_diff(got, head(want, b)), kTol);
  }
}

INSTANTIATE_TEST_SUITE_P(
    dlrm, DynamicBatch,
    ::testing::Values(PathCase{"seed", false, models::SparsePath::Graph, false, Precision::F32},
                      PathCase{"tables8_bag3", true, models::SparsePath::Graph, false, Precision::F32},
                      PathCase{"tables8_bag3", true, models::SparsePath::Fused, false, Precision::F32},
                      PathCase{"deep", true, models::SparsePath::Split, false, Precision::F32},
                      PathCase{"deep", true, models::SparsePath::Fused, false, Precision::BF16},
                      PathCase{"seed", false, models::SparsePath::Graph, true, Precision::F32},
                      PathCase{"tables8_bag3", true, models::SparsePath::Graph, true, Precision::F32}));

TEST(DynamicBatch, InputsCarryTheBatchSymbolOnlyWhenAsked) {
  const fx::Files f("seed");
  models::DlrmConfig c = fx::config(f, Precision::F32, true);
  for (bool dynamic : {false, true}) {
    c.dynamic_batch = dynamic;
    Graph g;
    const models::DlrmGraph d = models::build_dlrm(g, c);
    const Expr want = dynamic ? Expr::sym("batch") : Expr(c.batch);
    EXPECT_TRUE(d.dense_x.dims()[0].same(want)) << d.dense_x.dims()[0].to_string();
    EXPECT_TRUE(d.offsets[0].dims()[0].same(want));
    EXPECT_TRUE(d.out.dims()[0].same(want));
  }
}

// A plain-op DLRM with a dynamic batch: the rule offers the megakernel and the fused sparse kernels
// (their kernels read the batch at run time), and each alternative computes PyTorch's outputs at
// every batch on the reference runtime.
// Any one symbol serves (nn's "batch", or an export's "s77"): the replacement keeps its name.
class DynamicBatchRule : public ::testing::TestWithParam<const char*> {};

TEST_P(DynamicBatchRule, TheDlrmRuleOffersItsKernelsAndTheyServeEveryBatch) {
  const fx::Files f("tables8_bag3");
  models::DlrmConfig c = fx::config(f, Precision::F32, true);
  const int64_t full = c.batch;
  c.dynamic_batch = true;
  c.batch_symbol = GetParam();
  Graph g;
  const models::DlrmGraph d = models::build_dlrm(g, c);
  const std::vector<rules::RuleMatch> matches = rules::find_matches({g});
  ASSERT_EQ(matches.size(), 1u);
  EXPECT_NE(matches[0].summary.find(fmt::format("batch {}", GetParam())), std::string::npos)
      << matches[0].summary;
  const std::vector<float> want = fx::expected(f);
  for (const char* name : {"mega", "fused_sparse"}) {
    SCOPED_TRACE(name);
    const auto it = std::find_if(matches[0].alternatives.begin(), matches[0].alternatives.end(),
                                 [&](const rules::Alternative& a) { return a.name == name; });
    ASSERT_NE(it, matches[0].alternatives.end());
    EXPECT_EQ(it->refusal, "");
    rules::Applied applied = rules::apply(g, matches, name);
    ASSERT_TRUE(applied.rebuilt);
    Graph& rg = *applied.rebuilt->graph;
    const std::vector<NodeId>& map = applied.rebuilt->remap;
    auto moved = [&](const GraphTensor& t) { return GraphTensor(&rg, map.at(t.id)); };
    auto moved_all = [&](std::vector<GraphTensor> v) {
      for (GraphTensor& t : v) t = moved(t);
      return v;
    };
    models::DlrmGraph r{moved(d.dense_x), moved_all(d.indices), moved(d.out), moved_all(d.offsets),
                    d.inputs};
    models::DlrmTensors& t = r.inputs;
    t.dense_x = r.dense_x, t.indices = r.indices, t.offsets = r.offsets;
    for (auto* v : {&t.tables, &t.bot_w, &t.bot_b, &t.top_w, &t.top_b}) *v = moved_all(*v);
    ReferenceRuntime rt(rg);
    models::load_dlrm_weights(rt, r, c, f.w);
    for (int64_t b : {int64_t{1}, int64_t{5}, full}) {
      rt.execute(fx::bind_prefix(rt, r, c, f, b));
      EXPECT_LE(fx::max_abs_diff(rt.get_f32(r.out), head(want, b)), kTol) << "batch " << b;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(dlrm, DynamicBatchRule, ::testing::Values("batch", "s77"));

}  // namespace
}  // namespace luminal
