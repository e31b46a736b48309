// The search's correctness check: a candidate's outputs against the default plan's.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "luminal/graph.h"
#include "luminal/precision.h"

namespace luminal::compiler::search {

/// One output of the heuristic plan, as the candidates must reproduce it.
struct ReferenceOutput {
  NodeId node = 0;  // in the user's graph
  DType dtype = DType::F32;
  std::vector<std::byte> bytes;
};

/// "" when `got` matches the reference within the dtype's tolerance (at this precision), else
/// why not: a size difference, a non-finite value where the reference is finite, or the worst
/// element beyond atol + rtol * |reference|.
std::string compare_output(const ReferenceOutput& ref, const std::vector<std::byte>& got,
                           Precision precision);

}  // namespace luminal::compiler::search
