// The rules for graphs with states (rules.h, apply_for_states): the auto choice, no search.
#include <cstdlib>
#include <string_view>

#include "compiler/rules/rules.h"

namespace luminal::compiler::rules {

Applied apply_for_states(const Graph& g, const std::vector<RuleMatch>& matches) {
  const char* env = std::getenv("LUMINAL_RULES");
  if (env != nullptr && std::string_view(env) == "none") return {};
  return apply(g, matches, "auto");
}

}  // namespace luminal::compiler::rules
