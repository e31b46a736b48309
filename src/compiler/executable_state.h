// Executable::State: the compiler's side of a compiled graph, shared by executable.cpp (binding,
// buckets, the caller's registrations) and plan_search.cpp (the rules' choice points, the search,
// the plan cache).
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "compiler/rules/rules.h"
#include "compiler/search/candidate.h"
#include "luminal/compile.h"

namespace luminal {

/// One plan that can run, with what it was built from.
struct PlanSlot {
  std::unique_ptr<BackendPlan> plan;
  std::vector<NodeId> remap;  // user node -> node of the plan's graph (empty: the identity)
  DynMap hints;               // its dim hints (a bucket's max among them)
  std::optional<DimBucket> bucket;  // the range it serves (dim buckets only)
  compiler::search::Candidate candidate;  // the candidate it runs
  std::vector<compiler::search::ChoicePoint> lowering_points;  // its lowering's points
  bool searched = false;  // the search (or the plan cache, or a fixed candidate) decided it
  SearchReport report;
};

/// A rewrite rule's match and the alternatives CompileOptions::alternative left (default first; a
/// single one is fixed: applied in every candidate, no choice point).
struct RuleChoice {
  compiler::rules::RuleMatch match;
  std::vector<std::string> options;
  std::string why;  // why a named alternative is not among them
};

struct Executable::State {
  State(const Graph& g, Target b, CompileOptions o);

  const Graph& user;
  Target backend;
  CompileOptions opts;
  bool states = false;  // some output updates an input (output_into): not searched
  std::vector<RuleChoice> rules;                            // the matches, expanded once
  std::vector<compiler::search::ChoicePoint> rule_points;  // one per rule with a choice
  std::vector<size_t> rule_of_point;                        // its index in `rules`
  std::map<std::string, compiler::rules::Rebuilt> graphs;  // rebuilt graphs by picks text
  std::vector<PlanSlot> slots;  // one, or one per bucket (built on first use)
  int active = 0;
  int built = 0;
  // What the caller registered: every plan that starts running gets it too.
  std::map<NodeId, std::pair<void*, size_t>> output_ptrs;  // by user node
  std::optional<void*> stream;                              // nullopt: the plan's own

  /// The running plan.
  PlanSlot& slot() { return slots[size_t(active)]; }
  const PlanSlot& slot() const { return slots[size_t(active)]; }
  /// A user node in the running plan's graph.
  NodeId node(NodeId user_node) const;

  // ---- plan_search.cpp ----
  /// Finds the rules' matches and narrows them by opts.alternative (the one expansion).
  void expand_rules();
  /// The rule picks of c as text ("" when every match keeps its graph).
  std::string picks_key(const compiler::search::Candidate& c) const;
  /// The graph c's rule picks build (rebuilt once per distinct pick set) and its node map.
  std::pair<const Graph*, std::vector<NodeId>> graph_for(const compiler::search::Candidate& c);
  /// Builds candidate c's plan with these dim hints into `out` (its plan, map, points).
  void build(const compiler::search::Candidate& c, PlanSlot& out);
  /// Searches the running slot once every input it reads is bound (or takes the plan cache's
  /// winner, or the fixed candidate); installs the winner.
  void ensure_searched(const DynMap& dyn);
  /// The report lines of the rules for the running plan.
  std::vector<std::string> rule_lines() const;

  // ---- executable.cpp ----
  /// With dim buckets: makes the plan of dyn's bucket the running one.
  void select_bucket(const DynMap& dyn);
  /// Gives the running plan the caller's registrations (external outputs, stream).
  void reapply_registered();
};

/// Moves every bound input of the user's graph from one slot's plan to another's (through each
/// slot's node map): device blocks and external pointers change owner, staged host bytes travel.
void move_inputs(const Graph& user, PlanSlot& from, PlanSlot& to);

}  // namespace luminal
