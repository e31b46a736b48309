// The DLRM rule on PyTorch DLRM_Net exports (tests/fixtures/pt2/make_dlrm_net_fixtures.py): it
// finds the model in the translated graph, offers the megakernel / fused sparse path where they
// fit, refuses look-alikes, and every alternative it applies computes eager PyTorch's output on
// the reference runtime (the CUDA kernels are checked against the same decompositions elsewhere).
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cuda/codegen/kernels.h"
#include "compiler/kernel_plan.h"
#include "compiler/rules/rules.h"
#include "expect_error.h"
#include "luminal/program.h"
#include "luminal/safetensors.h"

namespace luminal {
namespace {

std::string fixture(const std::string& name) { return std::string(LUMINAL_FIXTURES) + "/pt2/" + name; }

const SafetensorsFile& expected() {
  static const SafetensorsFile f = SafetensorsFile::open(fixture("dlrm_net_t215.safetensors"));
  return f;
}

std::vector<float> floats(const SafeTensor& t) {
  std::vector<float> v(t.data.size() / sizeof(float));
  std::memcpy(v.data(), t.data.data(), t.data.size());
  return v;
}

// The rule's matches in the case's translated graph (as CompiledProgram sees it, without constants
// the graph could not match: li / lj are lifted constants, passed here as known values).
// (The matches' replacements refer to p's graph: keep p alive to apply them.)
std::vector<compiler::rules::RuleMatch> matches_in(const ImportedProgram& p) {
  std::map<NodeId, std::span<const std::byte>> known;
  for (const ProgramWeight& w : p.weights)
    if (!w.source->is_param) known[w.tensor.id] = w.source->contiguous_bytes();
  compiler::rules::RuleContext ctx{*p.graph, [&](NodeId id) -> std::optional<std::span<const std::byte>> {
                                     auto it = known.find(id);
                                     if (it == known.end()) return std::nullopt;
                                     return it->second;
                                   }};
  return compiler::rules::find_matches(ctx);
}

std::vector<compiler::rules::RuleMatch> matches_of(const std::string& c) {
  return matches_in(import_pt2(fixture("dlrm_net_" + c + "_t215.pt2")));
}

// Runs the case on the reference runtime with `alternative` and compares with eager PyTorch.
std::vector<std::string> run_case(const std::string& c, const std::string& alternative) {
  ProgramOptions o;
  o.compile.alternative = alternative;
  auto p = CompiledProgram::load(fixture("dlrm_net_" + c + "_t215.pt2"), o);
  for (size_t i = 0; i < p->program().inputs.size(); ++i) {
    const SafeTensor& t = expected().at(c + ".input." + std::to_string(i));
    p->set_input(i, t.data, t.shape);
  }
  p->run();
  const std::vector<float> want = floats(expected().at(c + ".output"));
  const std::vector<std::byte> bytes = p->output_bytes(0);
  std::vector<float> got(bytes.size() / sizeof(float));
  std::memcpy(got.data(), bytes.data(), bytes.size());
  EXPECT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size() && i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 1e-6) << c << " / " << alternative << " sample " << i;
  return p->rule_report();
}

const compiler::rules::Alternative& alt(const compiler::rules::RuleMatch& m, const std::string& name) {
  for (const auto& a : m.alternatives)
    if (a.name == name) return a;
  throw std::runtime_error("no alternative " + name);
}

TEST(DlrmRule, FindsDlrmNetAtTheSeedShape) {
  for (const char* c : {"seed", "seed_decomp"}) {
    const auto ms = matches_of(c);
    ASSERT_EQ(ms.size(), 1u) << c;
    EXPECT_EQ(ms[0].rule, "dlrm");
    EXPECT_EQ(ms[0].summary, "bottom 13-8-4, 3 sum tables x 4, top 10-8-1, batch 6") << c;
    EXPECT_EQ(alt(ms[0], "mega").refusal, "") << c;
    EXPECT_EQ(alt(ms[0], "fused_sparse").refusal, "") << c;
    EXPECT_EQ(ms[0].alternatives.back().name, "decomposed");
  }
}

TEST(DlrmRule, EveryAlternativeMatchesEagerOnTheReference) {
  for (const char* c : {"seed", "seed_decomp", "mean"}) {
    for (const char* a : {"mega", "fused_sparse", "none"}) {
      const auto report = run_case(c, a);
      ASSERT_EQ(report.size(), 1u);
      EXPECT_NE(report[0].find(std::string("-> ") + (a == std::string("none") ? "decomposed" : a)),
                std::string::npos)
          << report[0];
    }
  }
}

// fused_sparse pads R to 8 columns and the first top weight to match; that matmul must still be
// BLAS-shaped (a MatmulStep reading the padded weight's own buffer, not a generated reduction).
TEST(DlrmRule, TheFusedSparsePathsFirstTopMatmulGoesToCublaslt) {
  const ImportedProgram p = import_pt2(fixture("dlrm_net_seed_t215.pt2"));
  const auto ms = matches_in(p);
  ASSERT_EQ(ms.size(), 1u);
  const compiler::rules::Rebuilt r =
      compiler::rules::rebuild(*p.graph, {alt(ms[0], "fused_sparse").replacement});
  compiler::LowerOptions lo;
  lo.cublaslt_min_flops = 0;
  const compiler::KernelPlan plan = cuda::codegen::lower_and_render(*r.graph, lo);
  std::vector<std::string> ks;
  for (const compiler::Step& s : plan.steps)
    if (const auto* m = std::get_if<compiler::MatmulStep>(&s)) ks.push_back(m->k.to_string());
  EXPECT_NE(std::find(ks.begin(), ks.end(), "16"), ks.end())
      << "no matmul over the padded width 16 (top input 10); matmul ks: " << ks.size();
}

TEST(DlrmRule, ReferenceAutoKeepsTheGraphAndSaysWhatIsOffered) {
  const auto report = run_case("seed", "auto");
  ASSERT_EQ(report.size(), 1u);
  EXPECT_NE(report[0].find("-> decomposed (offered: mega, fused_sparse)"), std::string::npos)
      << report[0];
}

TEST(DlrmRule, MeanBagsAreMatchedAsMean) {
  const auto ms = matches_of("mean");
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_NE(ms[0].summary.find("3 mean tables"), std::string::npos) << ms[0].summary;
}

TEST(DlrmRule, TooWideForTheMegakernelFallsBackToTheFusedSparsePath) {
  const auto ms = matches_of("wide");
  ASSERT_EQ(ms.size(), 1u);
  EXPECT_EQ(ms[0].summary, "bottom 5-96-16, 4 sum tables x 16, top 26-24-1, batch 5");
  EXPECT_NE(alt(ms[0], "mega").refusal.find("96"), std::string::npos) << alt(ms[0], "mega").refusal;
  EXPECT_EQ(alt(ms[0], "fused_sparse").refusal, "");
  EXPECT_EQ(compiler::rules::auto_choice(ms[0]).name, "fused_sparse");
  const auto report = run_case("wide", "mega");  // refused: the graph stays, the report says why
  EXPECT_NE(report[0].find("-> decomposed; mega: "), std::string::npos) << report[0];
  run_case("wide", "fused_sparse");
}

// The dlrm rule's matches only (bag_concat may still find the [x, bags] concat these models share).
std::vector<compiler::rules::RuleMatch> dlrm_only(std::vector<compiler::rules::RuleMatch> ms) {
  std::erase_if(ms, [](const compiler::rules::RuleMatch& m) { return m.rule != "dlrm"; });
  return ms;
}

TEST(DlrmRule, LookAlikesAreNotMatched) {
  EXPECT_TRUE(dlrm_only(matches_of("itself")).empty());  // diagonal pairs in the interaction
  EXPECT_TRUE(dlrm_only(matches_of("tanh")).empty());    // a Tanh where DLRM has a ReLU
  // tests/fixtures/pt2's TinyDlrm scales the pairs by 0.5 (and has no bottom MLP chain of its own).
  const ImportedProgram p = import_pt2(fixture("dlrm_t215.pt2"));
  EXPECT_TRUE(dlrm_only(compiler::rules::find_matches({*p.graph, nullptr})).empty());
  run_case("itself", "mega");  // nothing to apply: eager's output, no report line
}

TEST(DlrmRule, UnknownAlternativeIsAnError) {
  ProgramOptions o;
  o.compile.alternative = "fastest";
  test::expect_error([&] { CompiledProgram::load(fixture("dlrm_net_seed_t215.pt2"), o); },
                     {"[rules] unknown alternative 'fastest'"});
}

}  // namespace
}  // namespace luminal
