// Intermediate-buffer placement in one arena, reusing memory between buffers whose lifetimes
// (first to last step that touches them) do not overlap. Plain C++, testable without a GPU.
#pragma once

#include <cstddef>
#include <vector>

namespace luminal::cuda {

/// One buffer to place: its size and the inclusive range of steps that use it.
struct ArenaRequest {
  size_t bytes = 0;
  int first = 0, last = 0;
};

/// Offsets per request (aligned) and the arena size they need.
struct ArenaLayout {
  std::vector<size_t> offsets;
  size_t total = 0;
};

/// Places every request so that two requests whose step ranges overlap never share a byte.
/// Greedy, largest first, lowest fitting offset; deterministic.
ArenaLayout plan_arena(const std::vector<ArenaRequest>& reqs, size_t align = 256);

}  // namespace luminal::cuda
