// The search on the CUDA runtime (shared/DESIGN.md section 9): at the first execute() with every
// input bound, each candidate (a rewrite-rule pick per match plus a lowering pick per choice
// point) is lowered, compiled and run on those inputs, its outputs checked against the heuristic
// plan's, and timed with CUDA events; the fastest valid one becomes the runtime's plan. Inputs move
// between the candidates' plans (device blocks change owner; nothing is copied but staged host
// inputs), so a search needs no second copy of the weights.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <stdexcept>
#include <utility>

#include "compiler/search/graph_hash.h"
#include "compiler/search/plan_cache.h"
#include "compiler/search/search.h"
#include "cuda/runtime/runtime_impl.h"
#include "cuda/runtime/search_check.h"

namespace luminal::cuda {

namespace cs = compiler::search;
namespace rules = compiler::rules;

namespace {

std::string rule_key(size_t i, const rules::RuleMatch& m) { return fmt::format("{}@{}", m.rule, i); }

// The rule picks of c as text (the key of the graph they build; "" = every match decomposed).
std::string rule_picks(const cs::Candidate& c, const std::vector<cs::ChoicePoint>& points) {
  std::string s;
  for (const cs::ChoicePoint& p : points)
    if (const std::string& pick = c.pick(p); pick != p.options[0])
      s += (s.empty() ? "" : ",") + p.key + "=" + pick;
  return s;
}

// Median device time of `trials` runs after `warmup` (inputs kept bound).
double time_runs(CudaRuntime::Impl& impl, const DynMap& dyn, int warmup, int trials) {
  for (int i = 0; i < warmup; ++i) impl.execute(dyn, false);
  const Driver& d = drv();
  std::vector<double> us;
  EventHandle start, stop;
  CUevent e0 = nullptr, e1 = nullptr;
  CHECK_CUDA(d.cuEventCreate(&e0, CU_EVENT_DEFAULT));
  start.reset(e0);
  CHECK_CUDA(d.cuEventCreate(&e1, CU_EVENT_DEFAULT));
  stop.reset(e1);
  for (int i = 0; i < std::max(trials, 1); ++i) {
    CHECK_CUDA(d.cuEventRecord(e0, impl.stream));
    impl.execute(dyn, false);
    CHECK_CUDA(d.cuEventRecord(e1, impl.stream));
    CHECK_CUDA(d.cuEventSynchronize(e1));
    float ms = 0;
    CHECK_CUDA(d.cuEventElapsedTime_v2(&ms, e0, e1));
    us.push_back(ms * 1e3);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

// Device bytes a plan holds beyond its inputs: the arena and its owned outputs.
uint64_t plan_bytes(const CudaRuntime::Impl& impl) {
  uint64_t b = impl.arena_bytes;
  for (int o : impl.output_buffers) b += impl.buffer_bytes.at(size_t(o));
  return b;
}

// The dims of a plan-cache key: each value, except a bucket plan's dim, which is its range (the
// plan serves the whole range, searched at whichever value came first).
std::string dims_text(const DynMap& dyn, const BucketOptions& bucket) {
  std::string s;
  for (const auto& [k, v] : dyn) {
    if (bucket.enabled() && k == bucket.dim && bucket.ranges.size() == 1)
      s += fmt::format("{}=[{},{}];", k, bucket.ranges[0].min, bucket.ranges[0].max);
    else
      s += fmt::format("{}={};", k, v);
  }
  return s;
}

// The report's line per choice point of the installed plan.
void report_choices(CudaRuntime::Search& st, const std::vector<cs::ChoicePoint>& lowering,
                    const cs::Candidate& c) {
  st.report.choices.clear();
  for (const std::vector<cs::ChoicePoint>* list : {&std::as_const(st.rule_points), &lowering})
    for (const cs::ChoicePoint& p : *list)
      st.report.choices.push_back(fmt::format("{} = {} ({})", p.key, c.pick(p), p.about));
}

}  // namespace

// Moves every bound input of the user's graph from one plan to another (node ids through each
// plan's map): device blocks and external pointers change owner, staged host bytes are copied.
void move_inputs(const Graph& user, CudaRuntime::Impl& from, const std::vector<NodeId>& from_map,
                 CudaRuntime::Impl& to, const std::vector<NodeId>& to_map) {
  from.sync_stream();
  auto at = [](const std::vector<NodeId>& m, NodeId u) { return m.empty() ? u : m[u]; };
  for (NodeId u = 0; u < user.size(); ++u) {
    if (user.node(u).kind != OpKind::Input) continue;
    const NodeId a = at(from_map, u), b = at(to_map, u);
    InputSlot& s = from.slot(a);
    if (!s.has_data) continue;
    if (s.staged) {
      to.upload(b, from.get_bytes(a), false);
    } else {
      InputSlot& d = to.slot(b);
      const CUdeviceptr staged_ptr = d.staged_ptr;
      d = s;
      d.staged_ptr = staged_ptr;
      to.dirty = true;
    }
    const CUdeviceptr staged_ptr = s.staged_ptr;
    s = InputSlot{};
    s.staged_ptr = staged_ptr;
    from.dirty = true;
  }
}

CudaRuntime::Search::Search(const Graph& g, const CudaOptions& opts) {
  rules::RuleContext ctx{g, nullptr, "cuda", opts.precision};
  matches = rules::find_matches(ctx);
  for (size_t i = 0; i < matches.size(); ++i) {
    cs::ChoicePoint p{rule_key(i, matches[i]), {"decomposed"}, matches[i].summary};
    for (const rules::Alternative& a : matches[i].alternatives)
      if (a.refusal.empty() && a.replacement.build) p.options.push_back(a.name);
    if (p.options.size() == 1) continue;
    rule_points.push_back(std::move(p));
    rule_match.push_back(i);
  }
}

void CudaRuntime::Search::take_auto(const Graph& user) {
  done = true;
  rules::Applied applied = rules::apply_for_states(user, matches);
  report.choices = applied.report;
  if (!applied.rebuilt) return;
  remap = applied.rebuilt->remap;
  active_graph = applied.rebuilt->graph.get();
  graphs.emplace("auto", std::move(*applied.rebuilt));
}

NodeId CudaRuntime::active(NodeId node) const {
  return search_ && !search_->remap.empty() ? search_->remap.at(node) : node;
}

const SearchReport& CudaRuntime::search_report() const {
  static const SearchReport none;
  return search_ ? search_->report : none;
}

void CudaRuntime::ensure_searched(const DynMap& dyn) {
  if (!search_ || search_->done || !impl_->inputs_ready()) return;  // execute() names the input
  search_->done = true;
  Search& st = *search_;
  const auto t0 = std::chrono::steady_clock::now();
  const CudaOptions& opts = impl_->opts;
  const Graph& user = graph_;

  // The graph and node map a candidate's rule picks give (rebuilt once per distinct pick set).
  auto graph_for = [&](const cs::Candidate& c) -> std::pair<const Graph*, std::vector<NodeId>> {
    const std::string key = rule_picks(c, st.rule_points);
    if (key.empty()) return {&user, {}};
    auto it = st.graphs.find(key);
    if (it == st.graphs.end()) {
      std::vector<rules::Replacement> reps;
      for (size_t p = 0; p < st.rule_points.size(); ++p) {
        const std::string& pick = c.pick(st.rule_points[p]);
        for (const rules::Alternative& a : st.matches[st.rule_match[p]].alternatives)
          if (a.name == pick && a.replacement.build) reps.push_back(a.replacement);
      }
      it = st.graphs.emplace(key, rules::rebuild(user, reps)).first;
    }
    return {it->second.graph.get(), it->second.remap};
  };

  // The heuristic plan's outputs on these inputs: every candidate must reproduce them.
  impl_->execute(dyn, false);
  // Clocks up before the first timing: the heuristic plan is timed first, and a cold GPU would
  // make it look slower than it is.
  for (int i = 0; i < 3 * (opts.search.warmup + opts.search.trials); ++i) impl_->execute(dyn, false);
  std::vector<ReferenceOutput> reference;
  for (NodeId o : user.outputs())
    reference.push_back({o, user.node(o).dtype, impl_->get_bytes(o)});

  const bool poison_env = impl_->poison;
  double heuristic_us = 0;  // the heuristic plan's time, once measured: the run timeout's base
  auto evaluate = [&](const cs::Candidate& c) -> cs::Evaluation {
    cs::Evaluation ev;
    ev.points = st.rule_points;
    std::unique_ptr<Impl> cand;
    std::vector<NodeId> map;
    const bool limited = !c.picks.empty();  // the heuristic plan has no time limits
    try {
      auto [g, m] = graph_for(c);
      map = m;
      cs::Choices choices(c);
      const auto c0 = std::chrono::steady_clock::now();
      cand = std::make_unique<Impl>(*g, opts, &choices);
      const double compile_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
      for (const cs::ChoicePoint& p : choices.points()) ev.points.push_back(p);
      if (limited && compile_s > opts.search.compile_timeout_s) {
        ev.verdict = cs::Verdict::TimedOut;
        ev.detail = fmt::format("lowering and compile took {:.2f} s (limit {:.2f} s)", compile_s,
                                opts.search.compile_timeout_s);
        return ev;  // nothing was moved into it
      }
      move_inputs(user, *impl_, {}, *cand, map);
      cand->poison = true;  // outputs and arena start as NaN: stale memory cannot pass the check
      cand->execute(dyn, false);
      cand->poison = poison_env;
      for (const ReferenceOutput& r : reference) {
        const std::string why = compare_output(r, cand->get_bytes(map.empty() ? r.node : map[r.node]),
                                               opts.precision);
        if (!why.empty()) {
          ev.verdict = cs::Verdict::Mismatch;
          ev.detail = why;
          break;
        }
      }
      if (ev.verdict == cs::Verdict::Ok && opts.search.memory_cap > 0 &&
          plan_bytes(*cand) > opts.search.memory_cap) {
        ev.verdict = cs::Verdict::OverMemory;
        ev.detail = fmt::format("{} bytes > cap {}", plan_bytes(*cand), opts.search.memory_cap);
      }
      if (ev.verdict == cs::Verdict::Ok && limited && heuristic_us > 0) {
        // One run first: a candidate far slower than the heuristic plan is not worth the trials.
        const double once = time_runs(*cand, dyn, 0, 1);
        if (once > opts.search.run_timeout_factor * heuristic_us) {
          ev.verdict = cs::Verdict::TimedOut;
          ev.detail = fmt::format("one run took {:.1f} us, over {:g} x the heuristic plan's {:.1f} us",
                                  once, opts.search.run_timeout_factor, heuristic_us);
        }
      }
      if (ev.verdict == cs::Verdict::Ok)
        ev.us = time_runs(*cand, dyn, opts.search.warmup, opts.search.trials);
      if (!limited && ev.verdict == cs::Verdict::Ok && heuristic_us == 0) heuristic_us = ev.us;
    } catch (const std::exception& e) {
      ev.verdict = cs::Verdict::Failed;
      ev.detail = e.what();
    }
    if (cand) {
      try {
        move_inputs(user, *cand, map, *impl_, {});
      } catch (const std::exception& e) {  // the inputs are lost with it: nothing can continue
        throw std::runtime_error(fmt::format("[search] moving inputs back failed: {}", e.what()));
      }
    }
    return ev;
  };

  cs::SearchOptions so = opts.search;
  const cs::PlanCache cache = cs::PlanCache::from_env();
  const uint64_t key = cs::plan_key({"cuda-plan", fmt::format("{:016x}", cs::graph_hash(user)),
                                     device_description(), dims_text(dyn, opts.buckets),
                                     std::string(precision_name(opts.precision)),
                                     fmt::format("graph={} branches={}", opts.cuda_graph,
                                                 opts.graph_branches)});
  std::optional<cs::Candidate> fixed;
  if (!opts.candidate.empty()) {
    fixed = cs::Candidate::parse(opts.candidate);
    if (!fixed)
      throw std::invalid_argument(fmt::format("[search] malformed candidate '{}'", opts.candidate));
  } else if (!so.force) {
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
    const cs::SearchResult r = cs::run_search(evaluate, so, "cuda plan");
    best_of_search = r.best;
    st.report.us = r.best_us;
    // Confirmation: the winner and the heuristic plan timed again, alternately; the winner stays
    // only if it is still faster by more than kMinGain (one timing of each can be noise).
    if (!best_of_search.picks.empty()) {
      double heuristic = 0, winner = 0;
      bool ok = true;
      for (int i = 0; i < 2 && ok; ++i) {
        const cs::Evaluation a = evaluate({}), b = evaluate(best_of_search);
        ok = a.verdict == cs::Verdict::Ok && b.verdict == cs::Verdict::Ok;
        heuristic += a.us, winner += b.us;
      }
      if (!ok || !(winner < heuristic * (1 - cs::kMinGain))) {
        best_of_search = {};
        st.report.us = heuristic / 2;
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
  if (!winner.picks.empty()) {  // install it: inputs and the caller's registrations move over
    auto [g, map] = graph_for(winner);
    cs::Choices choices(winner);
    auto plan = std::make_unique<Impl>(*g, opts, &choices);
    move_inputs(user, *impl_, {}, *plan, map);
    impl_ = std::move(plan);
    st.remap = map;
    reapply_registered();
    report_choices(st, choices.points(), winner);
  } else {
    cs::Choices choices(winner);  // the installed plan's points: its lowering, asked again
    compiler::LowerOptions lower_opts;
    lower_opts.dim_hints = opts.dim_hints;
    lower_opts.choices = &choices;
    (void)compiler::lower(user, lower_opts);
    report_choices(st, choices.points(), winner);
  }
  st.report.candidate = winner.to_string();
  st.report.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace luminal::cuda
