// The search of compile() (shared/DESIGN.md section 9), on any backend: the rewrite rules are
// expanded once into choice points; at the first execute() with every input bound each candidate
// (a rule pick per match plus a lowering pick per choice point) is built by the backend, run on
// those inputs, its outputs checked against the default plan's, and timed; the fastest valid one
// becomes the running plan. Inputs move between the candidates' plans (nothing is copied but
// staged host inputs), so a search needs no second copy of the weights.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <utility>

#include "compiler/executable_state.h"
#include "compiler/search/graph_hash.h"
#include "compiler/search/output_check.h"
#include "compiler/search/plan_cache.h"
#include "compiler/search/search.h"

namespace luminal {

namespace cs = compiler::search;
namespace rules = compiler::rules;

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The dims of a plan-cache key: each value, except a bucket plan's dim, which is its range (the
// plan serves the whole range, searched at whichever value came first).
std::string dims_text(const DynMap& dyn, const BucketOptions& buckets,
                      const std::optional<DimBucket>& range) {
  std::string s;
  for (const auto& [k, v] : dyn) {
    if (range && k == buckets.dim)
      s += fmt::format("{}=[{},{}];", k, range->min, range->max);
    else
      s += fmt::format("{}={};", k, v);
  }
  return s;
}

NodeId mapped(const std::vector<NodeId>& remap, NodeId u) { return remap.empty() ? u : remap[u]; }

}  // namespace

void Executable::State::expand_rules() {
  const std::string& want = opts.alternative;
  const auto& known = rule_alternatives();
  if (std::find(known.begin(), known.end(), want) == known.end())
    throw std::invalid_argument(fmt::format("[rules] unknown alternative '{}' ({})", want, fmt::join(known, ", ")));
  const rules::RuleContext ctx{user, opts.constants, backend.get(), opts.precision};
  const bool keep_graph_first = backend->default_alternative() == "none";
  for (rules::RuleMatch& m : rules::find_matches(ctx)) {
    RuleChoice rc{std::move(m), {}, ""};
    std::vector<std::string> available, search_only;
    for (const rules::Alternative& a : rc.match.alternatives) {
      if (a.refusal.empty() && a.replacement.build && a.search_only) {
        search_only.push_back(a.name);  // after the decomposition: never the default plan's pick
      } else if (a.refusal.empty() && a.replacement.build) {
        available.push_back(a.name);
      } else if (!a.refusal.empty() && (want == "auto" || want == a.name)) {
        rc.why += fmt::format("; {}: {}", a.name, a.refusal);
      }
    }
    if (want == "none" || want == "decomposed") {
      rc.options = {"decomposed"};
      rc.why.clear();
    } else if (want != "auto") {
      available.insert(available.end(), search_only.begin(), search_only.end());
      const bool ok = std::find(available.begin(), available.end(), want) != available.end();
      rc.options = {ok ? want : "decomposed"};
      if (ok) rc.why.clear();
      bool offered = false;
      for (const rules::Alternative& a : rc.match.alternatives) offered |= a.name == want;
      if (!offered) rc.why = fmt::format("; {}: not offered by the {} rule", want, rc.match.rule);
    } else if (keep_graph_first) {
      rc.options = {"decomposed"};
      rc.options.insert(rc.options.end(), available.begin(), available.end());
      rc.options.insert(rc.options.end(), search_only.begin(), search_only.end());
    } else {
      rc.options = available;
      rc.options.push_back("decomposed");
      rc.options.insert(rc.options.end(), search_only.begin(), search_only.end());
    }
    const size_t i = rules.size();
    if (rc.options.size() > 1) {
      rule_points.push_back({fmt::format("{}@{}", rc.match.rule, i), rc.options, rc.match.summary});
      rule_of_point.push_back(i);
    }
    rules.push_back(std::move(rc));
  }
}

std::string Executable::State::picks_key(const cs::Candidate& c) const {
  std::string s;
  size_t p = 0;
  for (size_t i = 0; i < rules.size(); ++i) {
    const bool point = p < rule_of_point.size() && rule_of_point[p] == i;
    const std::string& pick = point ? c.pick(rule_points[p++]) : rules[i].options[0];
    if (pick != "decomposed") s += fmt::format("{}{}@{}={}", s.empty() ? "" : ",", rules[i].match.rule, i, pick);
  }
  return s;
}

std::pair<const Graph*, std::vector<NodeId>> Executable::State::graph_for(const cs::Candidate& c) {
  const std::string key = picks_key(c);
  if (key.empty()) return {&user, {}};
  auto it = graphs.find(key);
  if (it == graphs.end()) {
    std::vector<rules::Replacement> reps;
    size_t p = 0;
    for (size_t i = 0; i < rules.size(); ++i) {
      const bool point = p < rule_of_point.size() && rule_of_point[p] == i;
      const std::string& pick = point ? c.pick(rule_points[p++]) : rules[i].options[0];
      for (const rules::Alternative& a : rules[i].match.alternatives)
        if (a.name == pick && a.replacement.build) reps.push_back(a.replacement);
    }
    it = graphs.emplace(key, rules::rebuild(user, reps)).first;
  }
  return {it->second.graph.get(), it->second.remap};
}

void Executable::State::build(const cs::Candidate& c, PlanSlot& out) {
  auto [g, map] = graph_for(c);
  cs::Choices choices(c);
  out.plan = backend->build(BuildRequest{*g, &choices, out.hints, opts.precision});
  out.remap = std::move(map);
  out.candidate = c;
  out.lowering_points = choices.points();
  if (out.bucket) out.plan->reserve_dim(opts.buckets.dim, out.bucket->max);
}

std::vector<std::string> Executable::State::rule_lines() const {
  std::vector<std::string> out;
  const cs::Candidate& c = slot().candidate;
  size_t p = 0;
  for (size_t i = 0; i < rules.size(); ++i) {
    const RuleChoice& rc = rules[i];
    const bool point = p < rule_of_point.size() && rule_of_point[p] == i;
    const std::string& pick = point ? c.pick(rule_points[p++]) : rc.options[0];
    std::string offered;  // what a search (or a named alternative) could take instead
    for (const std::string& o : rc.options)
      if (o != pick) offered += (offered.empty() ? "" : ", ") + o;
    out.push_back(fmt::format("{}: {} -> {}{}{}", rc.match.rule, rc.match.summary, pick,
                              offered.empty() ? "" : " (offered: " + offered + ")", rc.why));
  }
  return out;
}

void Executable::State::ensure_searched(const DynMap& dyn) {
  PlanSlot& st = slot();
  if (st.searched || !st.plan->inputs_ready()) return;  // execute() names the missing input
  st.searched = true;
  const bool search = !states && opts.search.enabled && backend->searchable();
  if (!search && opts.candidate.empty()) {  // the default plan, unmeasured: say what it runs
    st.report.candidate = st.candidate.to_string();
    for (const auto* list : {&rule_points, &st.lowering_points})
      for (const cs::ChoicePoint& p : *list)
        st.report.choices.push_back(fmt::format("{} = {} ({})", p.key, st.candidate.pick(p), p.about));
    return;
  }
  const auto t0 = Clock::now();

  // The default plan's outputs on these inputs: every candidate must reproduce them.
  std::vector<cs::ReferenceOutput> reference;
  try {
    st.plan->execute(dyn, false);
    for (NodeId o : user.outputs())
      reference.push_back({o, user.node(o).dtype, st.plan->get_bytes(node(o))});
  } catch (const BadInputError&) {
    // These inputs are bad (an out-of-range index): nothing to check candidates against. The
    // search waits for a later execute; this one runs the default plan, and the error surfaces
    // where the caller looks for it (the next read or check_errors).
    st.searched = false;
    return;
  }
  // Clocks up before the first timing: the default plan is timed first, and a cold GPU would
  // make it look slower than it is.
  for (int i = 0; i < 3 * (opts.search.warmup + opts.search.trials); ++i) st.plan->execute(dyn, false);

  double default_us = 0;  // the default plan's time, once measured: the run timeout's base
  auto evaluate = [&](const cs::Candidate& c) -> cs::Evaluation {
    cs::Evaluation ev;
    ev.points = rule_points;
    PlanSlot cand;
    cand.hints = st.hints;
    cand.bucket = st.bucket;
    const bool limited = !c.picks.empty();  // the default plan has no time limits
    bool moved = false;
    try {
      const auto c0 = Clock::now();
      build(c, cand);
      const double compile_s = seconds_since(c0);
      for (const cs::ChoicePoint& p : cand.lowering_points) ev.points.push_back(p);
      if (limited && compile_s > opts.search.compile_timeout_s) {
        ev.verdict = cs::Verdict::TimedOut;
        ev.detail = fmt::format("lowering and compile took {:.2f} s (limit {:.2f} s)", compile_s,
                                opts.search.compile_timeout_s);
        return ev;  // nothing was moved into it
      }
      move_inputs(user, st, cand);
      moved = true;
      cand.plan->set_poison(true);  // outputs and scratch start as NaN: stale memory cannot pass
      cand.plan->execute(dyn, false);
      cand.plan->set_poison(false);
      for (const cs::ReferenceOutput& r : reference) {
        const std::string why =
            cs::compare_output(r, cand.plan->get_bytes(mapped(cand.remap, r.node)), opts.precision);
        if (!why.empty()) {
          ev.verdict = cs::Verdict::Mismatch;
          ev.detail = why;
          break;
        }
      }
      const uint64_t bytes = cand.plan->memory_bytes();
      if (ev.verdict == cs::Verdict::Ok && opts.search.memory_cap > 0 &&
          bytes > opts.search.memory_cap) {
        ev.verdict = cs::Verdict::OverMemory;
        ev.detail = fmt::format("{} bytes > cap {}", bytes, opts.search.memory_cap);
      }
      if (ev.verdict == cs::Verdict::Ok && limited && default_us > 0) {
        // One run first: a candidate far slower than the default plan is not worth the trials.
        const double once = cand.plan->time_us(dyn, 0, 1);
        if (once > opts.search.run_timeout_factor * default_us) {
          ev.verdict = cs::Verdict::TimedOut;
          ev.detail = fmt::format("one run took {:.1f} us, over {:g} x the default plan's {:.1f} us",
                                  once, opts.search.run_timeout_factor, default_us);
        }
      }
      if (ev.verdict == cs::Verdict::Ok)
        ev.us = cand.plan->time_us(dyn, opts.search.warmup, opts.search.trials);
      if (!limited && ev.verdict == cs::Verdict::Ok && default_us == 0) default_us = ev.us;
    } catch (const std::exception& e) {
      ev.verdict = cs::Verdict::Failed;
      ev.detail = e.what();
    }
    if (moved) {
      try {
        move_inputs(user, cand, st);
      } catch (const std::exception& e) {  // the inputs are lost with it: nothing can continue
        throw std::runtime_error(fmt::format("[search] moving inputs back failed: {}", e.what()));
      }
    }
    return ev;
  };

  const cs::PlanCache cache = cs::PlanCache::in_cache_root(opts.plan_cache);
  const uint64_t key = cs::plan_key(
      {"plan-v2", fmt::format("{:016x}", cs::graph_hash(user)), backend->description(),
       backend->options_key(), dims_text(dyn, opts.buckets, st.bucket),
       std::string(precision_name(opts.precision)), "alternative=" + opts.alternative});
  std::optional<cs::Candidate> fixed;
  if (!opts.candidate.empty()) {
    fixed = cs::Candidate::parse(opts.candidate);
  } else if (!opts.search.force) {
    if (auto hit = cache.load(key)) {
      fixed = hit->candidate;
      st.report.from_cache = true;
    }
  }
  st.report.ran = true;
  if (fixed) {
    const cs::Evaluation ev = evaluate(*fixed);
    st.report.candidates = 1;
    if (ev.verdict != cs::Verdict::Ok) {
      if (!opts.candidate.empty())
        throw std::runtime_error(fmt::format("[search] candidate '{}' {}: {}", opts.candidate,
                                             cs::verdict_name(ev.verdict), ev.detail));
      fixed.reset();  // a stale cache entry: search again
      st.report.from_cache = false;
    } else {
      st.report.us = ev.us;
    }
  }
  cs::Candidate best_of_search;
  if (!fixed) {
    const cs::SearchResult r = cs::run_search(evaluate, opts.search, backend->kind() + " plan");
    best_of_search = r.best;
    st.report.us = r.best_us;
    // Confirmation: the winner and the default plan timed again, alternately; the winner stays
    // only if it is still faster by more than kMinGain (one timing of each can be noise).
    if (!best_of_search.picks.empty()) {
      double base = 0, winner = 0;
      bool ok = true;
      for (int i = 0; i < 2 && ok; ++i) {
        const cs::Evaluation a = evaluate({}), b = evaluate(best_of_search);
        ok = a.verdict == cs::Verdict::Ok && b.verdict == cs::Verdict::Ok;
        base += a.us, winner += b.us;
      }
      if (!ok || !(winner < base * (1 - cs::kMinGain))) {
        best_of_search = {};
        st.report.us = base / 2;
      } else {
        st.report.us = winner / 2;
      }
    }
    st.report.candidates = int(r.trials.size());
    for (const cs::Trial& t : r.trials) {
      if (t.eval.verdict != cs::Verdict::Ok) ++st.report.discarded;
      if (t.candidate.picks.empty() && t.eval.verdict == cs::Verdict::Ok)
        st.report.heuristic_us = t.eval.us;
    }
    st.report.exhaustive = r.exhaustive;
    cache.store(key, {best_of_search, st.report.us, int(r.trials.size())});
  }
  const cs::Candidate winner = fixed ? *fixed : best_of_search;
  if (!(winner == st.candidate)) {  // install it: inputs and the caller's registrations move over
    PlanSlot next;
    next.hints = st.hints;
    next.bucket = st.bucket;
    build(winner, next);
    move_inputs(user, st, next);
    st.plan = std::move(next.plan);
    st.remap = std::move(next.remap);
    st.candidate = next.candidate;
    st.lowering_points = std::move(next.lowering_points);
    reapply_registered();
  }
  st.report.choices.clear();
  for (const auto* list : {&rule_points, &st.lowering_points})
    for (const cs::ChoicePoint& p : *list)
      st.report.choices.push_back(fmt::format("{} = {} ({})", p.key, winner.pick(p), p.about));
  st.report.candidate = winner.to_string();
  st.report.seconds = seconds_since(t0);
}

}  // namespace luminal
