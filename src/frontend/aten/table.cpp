// The lookup of aten_ops.def: exported target -> lowering.
#include <algorithm>
#include <string>
#include <unordered_map>

#include "frontend/aten/node.h"

namespace luminal::aten {
namespace {

const std::unordered_map<std::string_view, Lowering>& table() {
  static const std::unordered_map<std::string_view, Lowering> t = {
#define ATEN_OP(target, fn) {target, &fn},
#include "frontend/aten/aten_ops.def"
#undef ATEN_OP
  };
  return t;
}

}  // namespace

Lowering find_lowering(std::string_view target) {
  constexpr std::string_view prefix = "torch.ops.";
  if (target.substr(0, prefix.size()) == prefix) target.remove_prefix(prefix.size());
  auto it = table().find(target);
  return it == table().end() ? nullptr : it->second;
}

std::vector<std::string> registered_targets() {
  std::vector<std::string> out;
  for (const auto& [k, v] : table()) out.emplace_back(k);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace luminal::aten
