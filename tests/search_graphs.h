// Small random graphs for the search's fuzz tests (NVRTC compile checks in CI, GPU runs against
// the reference on the device), and the candidates to try on each: every option of every choice
// point the lowering asks, each on its own, plus seeded random combinations.
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cuda/codegen/kernels.h"
#include "compiler/kernel_plan.h"
#include "compiler/search/candidate.h"
#include "luminal/tensor.h"

namespace luminal::test {

/// A random chain of Linear layers (bias, ReLU / sigmoid / none), maybe a softmax, and
/// reductions, with its inputs (x first, then the persisted weights).
struct RandomGraph {
  Graph g;
  std::vector<GraphTensor> inputs;
  std::vector<GraphTensor> outputs;
  int64_t rows = 0;
};

inline std::unique_ptr<RandomGraph> random_graph(unsigned seed) {
  std::mt19937 rng(seed);
  auto pick = [&rng](std::vector<int64_t> v) { return v[rng() % v.size()]; };
  auto r = std::make_unique<RandomGraph>();
  r->rows = pick({8, 64, 300});
  int64_t width = pick({16, 96, 256});
  GraphTensor h = r->g.named_tensor("x", {r->rows, width});
  r->inputs.push_back(h);
  const int layers = 1 + int(rng() % 3);
  for (int l = 0; l < layers; ++l) {
    const int64_t out = pick({8, 64, 160});
    GraphTensor w = r->g.named_tensor("w" + std::to_string(l), {width, out}).persist();
    GraphTensor b = r->g.named_tensor("b" + std::to_string(l), {out}).persist();
    r->inputs.push_back(w);
    r->inputs.push_back(b);
    h = h.matmul(w) + b;
    switch (rng() % 3) {
      case 0: h = h.relu(); break;
      case 1: h = h.sigmoid(); break;
      default: break;
    }
    width = out;
  }
  if (rng() % 2) h = h.softmax(1);
  r->outputs.push_back(h.output());
  r->outputs.push_back((rng() % 2 ? h.sum(1) : h.max(1)).output());
  return r;
}

/// The lowering's choice points for g under candidate c (compiler::lower asked with c's picks).
inline std::vector<compiler::search::ChoicePoint> lowering_points(
    const Graph& g, const compiler::search::Candidate& c = {}) {
  compiler::search::Choices choices(c);
  compiler::LowerOptions opts;
  opts.choices = &choices;
  (void)cuda::codegen::lower_and_render(g, opts);
  return choices.points();
}

/// The points of the heuristic plan plus those only a one-option change exposes (a small matmul
/// sent to cuBLASLt has algorithm and epilogue points the generated kernel has not).
inline std::vector<compiler::search::ChoicePoint> all_lowering_points(const Graph& g) {
  std::vector<compiler::search::ChoicePoint> all = lowering_points(g);
  auto known = [&all](const std::string& key) {
    for (const auto& p : all)
      if (p.key == key) return true;
    return false;
  };
  for (size_t i = 0, n = all.size(); i < n; ++i)
    for (size_t o = 1; o < all[i].options.size(); ++o)
      for (auto& p : lowering_points(g, {{{all[i].key, all[i].options[o]}}}))
        if (!known(p.key)) all.push_back(std::move(p));
  return all;
}

/// Every non-default option of every point on its own, then `random` seeded combinations.
inline std::vector<compiler::search::Candidate> candidates_to_try(
    const std::vector<compiler::search::ChoicePoint>& points, int random, unsigned seed) {
  std::vector<compiler::search::Candidate> out;
  for (const auto& p : points)
    for (size_t o = 1; o < p.options.size(); ++o) out.push_back({{{p.key, p.options[o]}}});
  std::mt19937 rng(seed);
  for (int i = 0; i < random && !points.empty(); ++i) {
    compiler::search::Candidate c;
    for (const auto& p : points) c.picks[p.key] = p.options[rng() % p.options.size()];
    out.push_back(std::move(c));
  }
  return out;
}

}  // namespace luminal::test
