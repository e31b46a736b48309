// run_search over synthetic cost functions: exhaustive and genetic modes, determinism, the
// reference rules (default first, discarded never win, 1% gain), discovered points, logging.
#include "compiler/search/search.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

namespace luminal::compiler::search {
namespace {

// n points "p<i>" of k options "o<j>"; the time is base + 10 per step away from target[i].
struct Space {
  std::vector<ChoicePoint> points;
  std::vector<int> target;
  double base = 100;

  Space(int n, int k, std::vector<int> t) : target(std::move(t)) {
    for (int i = 0; i < n; ++i) {
      ChoicePoint p{"p" + std::to_string(i), {}, "synthetic"};
      for (int j = 0; j < k; ++j) p.options.push_back("o" + std::to_string(j));
      points.push_back(std::move(p));
    }
  }
  double cost(const Candidate& c) const {
    double us = base;
    for (size_t i = 0; i < points.size(); ++i)
      us += 10 * std::abs(std::stoi(c.pick(points[i]).substr(1)) - target[i]);
    return us;
  }
  Evaluate evaluator() const {
    return [this](const Candidate& c) { return Evaluation{Verdict::Ok, cost(c), "", points}; };
  }
};

SearchOptions options(int max, uint64_t seed = 0) {
  SearchOptions o;
  o.enabled = true;
  o.max_candidates = max;
  o.seed = seed;
  o.time_budget_s = 1e9;
  return o;
}

std::vector<std::string> sequence(const SearchResult& r) {
  std::vector<std::string> s;
  for (const Trial& t : r.trials) s.push_back(t.candidate.to_string());
  return s;
}

TEST(Search, ExhaustiveFindsTheOptimumAndEvaluatesExactlyTheProduct) {
  const Space sp(3, 3, {2, 1, 2});
  const SearchResult r = run_search(sp.evaluator(), options(48), "test");
  EXPECT_EQ(r.trials.size(), 27u);
  EXPECT_TRUE(r.exhaustive);
  EXPECT_EQ(r.best.to_string(), "p0=o2,p1=o1,p2=o2");
  EXPECT_DOUBLE_EQ(r.best_us, 100);
  EXPECT_EQ(r.trials[0].candidate, Candidate{});  // the default is the reference, evaluated first
  const std::vector<std::string> seq = sequence(r);
  EXPECT_EQ(std::set<std::string>(seq.begin(), seq.end()).size(), seq.size());  // none twice
  EXPECT_EQ(r.points.size(), 3u);
}

TEST(Search, ALargeSpaceGoesGeneticAndRespectsMaxCandidates) {
  const Space sp(8, 4, {3, 1, 2, 0, 3, 3, 1, 2});
  const SearchResult r = run_search(sp.evaluator(), options(40, 1), "test");
  EXPECT_EQ(r.trials.size(), 40u);
  EXPECT_FALSE(r.exhaustive);
  const std::vector<std::string> seq = sequence(r);
  EXPECT_EQ(std::set<std::string>(seq.begin(), seq.end()).size(), seq.size());
  EXPECT_LT(r.best_us,
            sp.cost(Candidate{}) - 50);  // the sweep from the best climbs well past the default
  EXPECT_DOUBLE_EQ(r.best_us, sp.cost(r.best));
  for (const Trial& t : r.trials) EXPECT_EQ(canonical(t.candidate, sp.points), t.candidate);
}

TEST(Search, TheGeneticSearchIsDeterministicForASeed) {
  const Space sp(8, 4, {3, 1, 2, 0, 3, 3, 1, 2});
  // The sweep (deterministic) takes 8 x 3 candidates, then the seeded mutations run.
  const SearchResult a = run_search(sp.evaluator(), options(40, 7), "test");
  const SearchResult b = run_search(sp.evaluator(), options(40, 7), "test");
  const SearchResult c = run_search(sp.evaluator(), options(40, 8), "test");
  EXPECT_EQ(sequence(a), sequence(b));
  EXPECT_EQ(a.best, b.best);
  EXPECT_NE(sequence(a), sequence(c));
}

TEST(Search, DiscardedCandidatesNeverWin) {
  const Space sp(3, 3, {2, 1, 2});
  auto eval = [&](const Candidate& c) {
    Evaluation e{Verdict::Ok, sp.cost(c), "", sp.points};
    if (c.pick(sp.points[0]) == "o2")
      e = {Verdict::Mismatch, 1, "max |diff| 0.3 > tol 1e-4", sp.points};
    if (c.pick(sp.points[1]) == "o1") e = {Verdict::Failed, 1, "nvrtc: error", sp.points};
    return e;
  };
  const SearchResult r = run_search(eval, options(48), "test");
  EXPECT_EQ(r.trials.size(), 27u);
  // The best valid cost is 120, at p1=o0 and at p1=o2: the earlier (odometer order) wins.
  EXPECT_EQ(r.best.to_string(), "p0=o1,p2=o2");
  EXPECT_DOUBLE_EQ(r.best_us, 120);
}

TEST(Search, TheDefaultFailingThrows) {
  auto eval = [](const Candidate&) { return Evaluation{Verdict::Failed, 0, "boom", {}}; };
  try {
    run_search(eval, options(48), "dlrm b2048");
    FAIL() << "no throw";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "[search] dlrm b2048: the default plan failed: boom");
  }
}

TEST(Search, DisabledFirstValidOrNoTimeEvaluatesOnlyTheDefault) {
  const Space sp(3, 3, {2, 1, 2});
  SearchOptions off = options(48), first = options(48), no_time = options(48);
  off.enabled = false;
  first.first_valid = true;
  no_time.time_budget_s = 0;
  for (const SearchOptions& o : {off, first, no_time}) {
    const SearchResult r = run_search(sp.evaluator(), o, "test");
    EXPECT_EQ(r.trials.size(), 1u);
    EXPECT_EQ(r.best, Candidate{});
    EXPECT_DOUBLE_EQ(r.best_us, sp.cost(Candidate{}));
    EXPECT_FALSE(r.exhaustive);
    EXPECT_EQ(r.points.size(), 3u);
  }
}

TEST(Search, PointsExposedByLaterCandidatesAreSearched) {
  // The default plan has one point; picking its alternative exposes a second (cuBLASLt's
  // algorithms).
  const ChoicePoint a{"matmul@1", {"generated", "cublaslt"}, ""};
  const ChoicePoint b{"algo@1", {"0", "1"}, ""};
  auto eval = [&](const Candidate& c) {
    if (c.pick(a) == "generated") return Evaluation{Verdict::Ok, 100, "", {a}};
    return Evaluation{Verdict::Ok, c.pick(b) == "1" ? 50.0 : 90.0, "", {a, b}};
  };
  const SearchResult r = run_search(eval, options(48), "test");
  EXPECT_EQ(r.best.to_string(), "algo@1=1,matmul@1=cublaslt");
  EXPECT_DOUBLE_EQ(r.best_us, 50);
  EXPECT_EQ(r.points.size(), 2u);
  EXPECT_EQ(r.trials.size(), 4u);  // the algo pick under "generated" is a combination too
  EXPECT_TRUE(r.exhaustive);
}

TEST(Search, ACandidateMustBeMoreThanOnePercentFaster) {
  const ChoicePoint p{"p", {"a", "b", "c"}, ""};
  auto eval = [&](const Candidate& c) {
    return Evaluation{Verdict::Ok, c.pick(p) == "a" ? 100.0 : 99.5, "", {p}};
  };
  EXPECT_EQ(run_search(eval, options(48), "test").best, Candidate{});  // noise keeps the heuristic
  auto faster = [&](const Candidate& c) {
    return Evaluation{Verdict::Ok, c.pick(p) == "a" ? 100.0 : 98.0, "", {p}};
  };
  const SearchResult r = run_search(faster, options(48), "test");
  EXPECT_EQ(r.best.to_string(), "p=b");  // a tie between b and c: the earlier one
  EXPECT_DOUBLE_EQ(r.best_us, 98);
}

TEST(Search, DebugLogsEveryCandidateWithItsTimeOrWhyItWasDiscarded) {
  const ChoicePoint p{"matmul@17", {"cublaslt", "generated"}, ""};
  auto eval = [&](const Candidate& c) {
    if (c.pick(p) == "generated")
      return Evaluation{Verdict::Mismatch, 0, "max |diff| 0.3 > tol 1e-4", {p}};
    return Evaluation{Verdict::Ok, 57.7, "", {p}};
  };
  const char* old = std::getenv("LUMINAL_DEBUG");
  const std::string saved = old ? old : "";
  setenv("LUMINAL_DEBUG", "1", 1);
  testing::internal::CaptureStderr();
  (void)run_search(eval, options(48), "dlrm b2048");
  const std::string err = testing::internal::GetCapturedStderr();
  old ? setenv("LUMINAL_DEBUG", saved.c_str(), 1) : unsetenv("LUMINAL_DEBUG");
  EXPECT_NE(err.find("[search] dlrm b2048 #0 default: 57.7 us\n"), std::string::npos) << err;
  EXPECT_NE(
      err.find("[search] dlrm b2048 #1 matmul@17=generated: discarded (mismatch: max |diff| 0.3 > "
               "tol 1e-4)\n"),
      std::string::npos)
      << err;
}


// 40 lowering-like points and one rule point: the sweep tries the rule's alternative at once
// (random mutations over 41 points would often miss it in a small budget).
TEST(Search, TheSweepTriesRulePointsFirstInALargeSpace) {
  std::vector<ChoicePoint> points;
  for (int i = 0; i < 40; ++i) points.push_back({"algo@" + std::to_string(i), {"0", "1", "2", "3"}, ""});
  points.push_back({"dlrm@0", {"decomposed", "mega", "fused_sparse"}, "rule"});
  auto eval = [&](const Candidate& c) {
    const std::string& rule = c.pick(points.back());
    return Evaluation{Verdict::Ok, rule == "fused_sparse" ? 50.0 : rule == "mega" ? 80.0 : 100.0, "",
                      points};
  };
  const SearchResult r = run_search(eval, options(6), "test");
  ASSERT_EQ(r.trials.size(), 6u);
  EXPECT_EQ(r.trials[1].candidate.to_string(), "dlrm@0=mega");
  EXPECT_EQ(r.trials[2].candidate.to_string(), "dlrm@0=fused_sparse");
  EXPECT_EQ(r.best.to_string(), "dlrm@0=fused_sparse");
  // then the other points, one at a time, from the new best
  EXPECT_EQ(r.trials[3].candidate.to_string(), "algo@0=1,dlrm@0=fused_sparse");
  EXPECT_EQ(r.trials[5].candidate.to_string(), "algo@0=3,dlrm@0=fused_sparse");
}

}  // namespace
}  // namespace luminal::compiler::search
