// run_search: the default plan, then exhaustive, or (a large space) a one-point sweep from the best
// so far followed by genetic mutations; the logging in one place.
#include "compiler/search/search.h"
#include "io/environment.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <optional>
#include <random>
#include <set>
#include <stdexcept>

#include <unistd.h>

namespace luminal::compiler::search {

namespace {

using Clock = std::chrono::steady_clock;

// A new key joins the union; a known key gains the options it lacked (one point may offer
// different options in different plans). The first-seen default stays the default.
void merge_points(std::vector<ChoicePoint>& all, const std::vector<ChoicePoint>& seen) {
  for (const ChoicePoint& p : seen) {
    auto it =
        std::find_if(all.begin(), all.end(), [&](const ChoicePoint& q) { return q.key == p.key; });
    if (it == all.end()) {
      all.push_back(p);
      continue;
    }
    for (const std::string& o : p.options)
      if (std::find(it->options.begin(), it->options.end(), o) == it->options.end())
        it->options.push_back(o);
  }
}

// Number of combinations, saturating (a large space only has to compare as "too many").
uint64_t space_size(const std::vector<ChoicePoint>& points) {
  uint64_t n = 1;
  for (const ChoicePoint& p : points) {
    const uint64_t k = std::max<size_t>(p.options.size(), 1);
    n = n > std::numeric_limits<uint64_t>::max() / k ? std::numeric_limits<uint64_t>::max() : n * k;
  }
  return n;
}

// The first combination in odometer order (last point fastest) not tried yet. It is found within
// tried.size() + 1 steps, so this is cheap in any space that still has an untried combination.
std::optional<Candidate> first_untried(const std::vector<ChoicePoint>& points,
                                       const std::set<std::string>& tried) {
  std::vector<size_t> idx(points.size(), 0);
  while (true) {
    Candidate c;
    for (size_t i = 0; i < points.size(); ++i)
      if (idx[i] > 0) c.picks.emplace(points[i].key, points[i].options[idx[i]]);
    if (!tried.contains(c.to_string())) return c;
    size_t i = points.size();
    for (; i > 0; --i) {
      if (++idx[i - 1] < points[i - 1].options.size()) break;
      idx[i - 1] = 0;
    }
    if (i == 0) return std::nullopt;
  }
}

// Which points the sweep tries first: the rewrite rules' (they swap whole subgraphs: the megakernel,
// the production fused kernels), then the matmul backends and the fusion decisions, cuBLASLt's
// algorithm index and split-K last (their gains are small and they have the most points; split-K
// won nothing at DLRM-v2's one sample on an H100, 2026-12-07).
int sweep_rank(const std::string& key) {
  static const std::vector<std::string> lowering = {"matmul@", "materialize@", "softmax@",
                                                    "epilogue@", "gemv@", "reduce@",
                                                    "algo@", "splitk@"};
  for (size_t i = 0; i < lowering.size(); ++i)
    if (key.starts_with(lowering[i])) return int(i) + 1;
  return 0;  // a rule's match ("dlrm@0")
}

// One sweep step (one pass of coordinate descent from the best so far): the next untried one-point
// change of `best` at the first point not swept yet, points in sweep_rank order; a point whose
// options are all tried joins `swept` and is not visited again. A large space thus reaches every
// rule's alternative within the first few candidates, which random mutations may never do.
std::optional<Candidate> sweep(const std::vector<ChoicePoint>& points, const Candidate& best,
                               const std::set<std::string>& tried, std::set<std::string>& swept) {
  std::vector<size_t> order(points.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return sweep_rank(points[a].key) < sweep_rank(points[b].key);
  });
  for (size_t i : order) {
    const ChoicePoint& p = points[i];
    if (swept.contains(p.key)) continue;
    for (const std::string& o : p.options) {
      if (o == best.pick(p)) continue;
      Candidate c = best;
      c.picks[p.key] = o;
      c = canonical(c, points);
      if (!tried.contains(c.to_string())) return c;
    }
    swept.insert(p.key);
  }
  return std::nullopt;
}

// One genetic step: 1-2 points of one of the best valid trials set to another option. rng() % n
// rather than std::uniform_int_distribution: the latter differs between standard libraries.
std::optional<Candidate> mutate(const std::vector<Trial>& trials,
                                const std::vector<ChoicePoint>& points,
                                const std::set<std::string>& tried, std::mt19937_64& rng) {
  std::vector<const Trial*> parents;
  for (const Trial& t : trials)
    if (t.eval.verdict == Verdict::Ok) parents.push_back(&t);
  std::stable_sort(parents.begin(), parents.end(),
                   [](const Trial* a, const Trial* b) { return a->eval.us < b->eval.us; });
  if (parents.size() > size_t(kParents)) parents.resize(kParents);
  std::vector<size_t> open;  // points with something to choose
  for (size_t i = 0; i < points.size(); ++i)
    if (points[i].options.size() > 1) open.push_back(i);
  if (parents.empty() || open.empty()) return std::nullopt;
  for (int attempt = 0; attempt < 64; ++attempt) {
    Candidate c = parents[rng() % parents.size()]->candidate;
    for (uint64_t m = 0, n = 1 + rng() % 2; m < n; ++m) {
      const ChoicePoint& p = points[open[rng() % open.size()]];
      const auto cur = std::find(p.options.begin(), p.options.end(), c.pick(p)) - p.options.begin();
      size_t j = rng() % (p.options.size() - 1);
      if (j >= size_t(cur)) ++j;  // any option but the current one
      c.picks[p.key] = p.options[j];
    }
    c = canonical(c, points);
    if (!tried.contains(c.to_string())) return c;
  }
  return std::nullopt;
}

void log_trial(std::string_view what, size_t i, const Trial& t) {
  const std::string name = t.candidate.picks.empty() ? "default" : t.candidate.to_string();
  if (t.eval.verdict == Verdict::Ok) {
    fmt::print(stderr, "[search] {} #{} {}: {:.1f} us\n", what, i, name, t.eval.us);
  } else {
    fmt::print(stderr, "[search] {} #{} {}: discarded ({}{}{})\n", what, i, name,
               verdict_name(t.eval.verdict), t.eval.detail.empty() ? "" : ": ", t.eval.detail);
  }
}

}  // namespace

std::string_view verdict_name(Verdict v) {
  switch (v) {
    case Verdict::Ok:
      return "ok";
    case Verdict::Failed:
      return "failed";
    case Verdict::Mismatch:
      return "mismatch";
    case Verdict::OverMemory:
      return "over memory cap";
    case Verdict::TimedOut:
      return "timed out";
  }
  return "?";
}

SearchResult run_search(const Evaluate& evaluate, const SearchOptions& opts,
                        std::string_view what) {
  const auto t0 = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - t0).count(); };
  const int debug = io::debug_level();
  SearchResult r;
  std::set<std::string> tried;  // canonical to_string() of every candidate evaluated
  std::set<std::string> swept;  // points the sweep is done with
  std::mt19937_64 rng(opts.seed);
  auto run_one = [&](Candidate c) -> const Trial& {
    Evaluation ev = evaluate(c);
    merge_points(r.points, ev.points);
    tried.insert(c.to_string());
    r.trials.push_back({std::move(c), std::move(ev)});
    if (debug >= 1) log_trial(what, r.trials.size() - 1, r.trials.back());
    return r.trials.back();
  };
  bool progress =
      false;  // the \r line is showing; under LUMINAL_DEBUG the per-candidate lines replace it
  // On a terminal one line is rewritten in place; into a file or pipe (logs, CI) a line is
  // written at most every 5 s, so a search does not fill a log with a line per candidate.
  const bool tty = isatty(fileno(stderr)) != 0;
  double last_line = -1e9;
  auto show_progress = [&] {
    if (!tty && elapsed() - last_line < 5.0) return;
    last_line = elapsed();
    fmt::print(stderr, "{}[search] {}: {}/{} candidates, best {:.1f} us, {:.1f} s{}",
               tty ? "\r" : "", what, r.trials.size(), opts.max_candidates, r.best_us, elapsed(),
               tty ? "" : "\n");
    progress = true;
  };

  const Trial& reference = run_one(Candidate{});
  if (reference.eval.verdict != Verdict::Ok)
    throw std::runtime_error(
        fmt::format("[search] {}: the default plan failed: {}", what, reference.eval.detail));
  r.best_us = reference.eval.us;

  while (opts.enabled && !opts.first_valid && int(r.trials.size()) < opts.max_candidates &&
         elapsed() < opts.time_budget_s) {
    const uint64_t space = space_size(r.points);
    if (space <= tried.size()) break;  // every combination tried (tried is a subset of the space)
    const uint64_t slots = uint64_t(opts.max_candidates) - r.trials.size();
    std::optional<Candidate> next;
    if (space - tried.size() > slots) {
      next = sweep(r.points, r.best, tried, swept);
      if (!next) next = mutate(r.trials, r.points, tried, rng);
    }
    if (!next) next = first_untried(r.points, tried);  // small space, or mutation found nothing new
    if (!next) break;
    const Trial& t = run_one(std::move(*next));
    if (t.eval.verdict == Verdict::Ok && t.eval.us < r.best_us * (1.0 - kMinGain)) {
      r.best = t.candidate;
      r.best_us = t.eval.us;
    }
    if (debug == 0 && elapsed() > 1.0) show_progress();
  }
  r.exhaustive = space_size(r.points) <= tried.size();
  if (progress) {  // the final count
    last_line = -1e9;
    show_progress();
    if (tty) fmt::print(stderr, "\n");
  }
  r.seconds = elapsed();
  return r;
}

}  // namespace luminal::compiler::search
