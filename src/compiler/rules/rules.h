// Rewrite rules (shared/DESIGN.md section 9): each recognizes a region of a graph and offers
// implementations of it besides the decomposition already there. Until the search times them,
// the first available alternative in a match's list (a measured order) is the one applied.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "compiler/rules/graph_edit.h"
#include "luminal/backend.h"
#include "luminal/precision.h"

namespace luminal::compiler::rules {

struct RuleMatch;

/// What a rule may know about the program beyond its graph.
struct RuleContext {
  const Graph& graph;
  /// Values of Inputs fixed at compile time (lifted constants such as DLRM's li / lj).
  ConstantLookup constants;
  /// The backend the program compiles for (nullptr: none; alternatives that need a kernel of
  /// their own are then refused) and the precision.
  const Backend* backend = nullptr;
  Precision precision = Precision::F32;
  /// The backend's device capabilities (empty ones without a backend).
  const DeviceCaps& caps() const;
  /// The matches of the rules before this one (find_matches sets it; nullptr when a rule is called
  /// on its own), so a rule can yield to a larger match without matching it again.
  const std::vector<RuleMatch>* earlier = nullptr;
};

/// One implementation of a matched region.
struct Alternative {
  std::string name;         // "mega", "fused_sparse", "decomposed"
  std::string refusal;      // why it cannot run here; "" when it can
  Replacement replacement;  // unset build for the decomposition (the graph as it is)
  /// Not yet measured on this backend: only the search takes it (its outputs checked against the
  /// decomposition's); "auto" without a search keeps the decomposition.
  bool search_only = false;
};

/// A region a rule recognized and what it offers, best first; the decomposition comes last.
struct RuleMatch {
  std::string rule;     // "dlrm"
  std::string summary;  // the shape it recognized, for reports
  std::vector<Alternative> alternatives;
};

/// A rule: finds every region it recognizes (never throws on graphs it does not recognize).
struct Rule {
  const char* name;
  std::vector<RuleMatch> (*find)(const RuleContext& ctx);
};

/// The registered rules (registry.cpp).
const std::vector<Rule>& all_rules();

/// Every rule's matches in the graph.
std::vector<RuleMatch> find_matches(const RuleContext& ctx);

/// The alternative "auto" takes for a match: the first available that is not search-only (the
/// decomposition at worst).
const Alternative& auto_choice(const RuleMatch& m);

/// The outcome of choosing an alternative per match.
struct Applied {
  std::optional<Rebuilt> rebuilt;   // the rewritten graph, or nullopt when nothing was replaced
  std::vector<std::string> report;  // one line per match: what it is, what was chosen and why
};

/// Applies `choice` to every match: "auto" takes auto_choice's alternative, "none" the
/// decomposition, any other name that alternative where available (else the decomposition, and the
/// report says why). Throws "[rules] unknown alternative" for a name no rule offers.
Applied apply(const Graph& g, const std::vector<RuleMatch>& matches, std::string_view choice);

}  // namespace luminal::compiler::rules

