// The search over candidates (shared/DESIGN.md section 9): the default plan first, then every
// combination when the space is small, else a one-point sweep then a seeded genetic search; the
// timing is the evaluator's.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/search/candidate.h"
#include "luminal/search.h"

namespace luminal::compiler::search {

/// Options of the search: the public struct (luminal/search.h), so callers pass theirs through.
using SearchOptions = ::luminal::SearchOptions;

/// A candidate replaces the best only when it is faster by more than this fraction: timing noise of
/// a percent must not pick a plan over the heuristic one.
inline constexpr double kMinGain = 0.01;

/// Candidates the genetic search mutates: the best few valid ones.
inline constexpr int kParents = 4;

/// What happened to one candidate.
enum class Verdict { Ok, Failed, Mismatch, OverMemory, TimedOut };

/// "ok", "failed", "mismatch", "over memory cap", "timed out".
std::string_view verdict_name(Verdict v);

/// An evaluator's answer for one candidate.
struct Evaluation {
  Verdict verdict = Verdict::Ok;
  double us = 0;                    // measured time (Ok only)
  std::string detail;               // why it was discarded, or notes
  std::vector<ChoicePoint> points;  // the choice points this candidate's plan exposed
};

/// Compiles, runs, checks and times one candidate (never throws for a bad candidate: returns
/// Failed).
using Evaluate = std::function<Evaluation(const Candidate&)>;

/// One evaluated candidate (canonical over the points known when it was evaluated).
struct Trial {
  Candidate candidate;
  Evaluation eval;
};

/// The outcome: the best valid candidate (canonical) and everything tried.
struct SearchResult {
  Candidate best;
  double best_us = 0;
  std::vector<Trial> trials;        // in evaluation order; trials[0] is the default
  std::vector<ChoicePoint> points;  // union of all points seen (first-seen order)
  bool exhaustive = false;          // every combination was evaluated
  double seconds = 0;
};

/// Runs the search named `what` in messages ("dlrm b2048"):
///  - the default candidate first: the reference, so if it is not Ok this throws
///    std::runtime_error "[search] <what>: the default plan failed: <detail>";
///  - enabled=false or first_valid: stops there (the default is valid, so first_valid, the
///    reference runtime's mode, never searches);
///  - while the untried combinations of the known points fit max_candidates: each in odometer
///    order (exhaustive, deterministic); otherwise the sweep: the best so far with one point
///    changed, rule points first, then matmul backends, materializations, softmax, epilogues,
///    reduce tilings and cuBLASLt algorithms; once every one-point change of the best is tried, a
///    genetic step: mutate 1-2 random points of one of the kParents best valid candidates; never
///    a candidate twice;
///  - until max_candidates are evaluated, time_budget_s has passed (checked before each start),
///    or every combination is tried. Points a candidate's plan exposes join the space (unpicked
///    keys: their default).
/// Ties go to the earlier candidate (see kMinGain). Same seed and evaluator answers give the same
/// candidates in the same order. A progress line on stderr after 1 s; LUMINAL_DEBUG=1 logs each.
SearchResult run_search(const Evaluate& evaluate, const SearchOptions& opts, std::string_view what);

}  // namespace luminal::compiler::search
