// The rule table and how a choice of alternatives turns into a rewritten graph.
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/rules/rules.h"

namespace luminal::compiler::rules {

std::vector<RuleMatch> find_dlrm(const RuleContext& ctx);       // dlrm.cpp
std::vector<RuleMatch> find_attention(const RuleContext& ctx);  // attention.cpp
std::vector<RuleMatch> find_rms_norm(const RuleContext& ctx);   // rms_norm.cpp
std::vector<RuleMatch> find_bag_concat(const RuleContext& ctx); // bag_concat.cpp
std::vector<RuleMatch> find_cross_layer(const RuleContext& ctx); // cross_layer.cpp
std::vector<RuleMatch> find_mlp_chain(const RuleContext& ctx);   // mlp_chain.cpp

const std::vector<Rule>& all_rules() {
  static const std::vector<Rule> rules{
      {"dlrm", find_dlrm}, {"attention", find_attention}, {"rms_norm", find_rms_norm},
      {"bag_concat", find_bag_concat}, {"cross_layer", find_cross_layer},
      {"mlp_chain", find_mlp_chain}};
  return rules;
}

}  // namespace luminal::compiler::rules

namespace luminal {

const std::vector<std::string>& rule_alternatives() {
  static const std::vector<std::string> names{"auto", "none", "decomposed", "mega", "fused_sparse", "fused",
                                              "fused_m64", "split", "chain", "chain_m32"};
  return names;
}

}  // namespace luminal

namespace luminal::compiler::rules {

const DeviceCaps& RuleContext::caps() const {
  static const DeviceCaps none;
  return backend != nullptr ? backend->caps() : none;
}

std::vector<RuleMatch> find_matches(const RuleContext& ctx) {
  std::vector<RuleMatch> out;
  RuleContext with_earlier = ctx;
  with_earlier.earlier = &out;
  for (const Rule& r : all_rules())
    for (RuleMatch& m : r.find(with_earlier)) out.push_back(std::move(m));
  return out;
}

const Alternative& auto_choice(const RuleMatch& m) {
  for (const Alternative& a : m.alternatives)
    if (a.refusal.empty() && !a.search_only) return a;
  return m.alternatives.back();
}

Applied apply(const Graph& g, const std::vector<RuleMatch>& matches, std::string_view choice) {
  const auto& known = rule_alternatives();
  if (std::find(known.begin(), known.end(), choice) == known.end())
    throw std::invalid_argument(fmt::format("[rules] unknown alternative '{}' ({})", choice, fmt::join(known, ", ")));
  Applied out;
  std::vector<Replacement> reps;
  for (const RuleMatch& m : matches) {
    const Alternative* pick = nullptr;
    std::string why;
    for (const Alternative& a : m.alternatives) {
      const bool wanted = (choice == "auto" && !a.search_only) || a.name == choice ||
                          (choice == "none" && a.name == "decomposed");
      if (!wanted) continue;
      if (a.refusal.empty()) {
        pick = &a;
        break;
      }
      why += fmt::format("; {}: {}", a.name, a.refusal);
    }
    if (pick == nullptr) pick = &m.alternatives.back();  // the decomposition
    out.report.push_back(fmt::format("{}: {} -> {}{}", m.rule, m.summary, pick->name, why));
    if (pick->replacement.build) reps.push_back(pick->replacement);
  }
  if (!reps.empty()) out.rebuilt = rebuild(g, reps);
  return out;
}

}  // namespace luminal::compiler::rules
