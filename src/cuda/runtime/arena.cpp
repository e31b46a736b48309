// Greedy interval placement for the intermediate arena.
#include "cuda/runtime/arena.h"

#include <algorithm>
#include <numeric>

namespace luminal::cuda {

ArenaLayout plan_arena(const std::vector<ArenaRequest>& reqs, size_t align) {
  const size_t n = reqs.size();
  ArenaLayout out;
  out.offsets.assign(n, 0);
  auto rounded = [&](size_t b) { return (b + align - 1) / align * align; };
  std::vector<size_t> order(n);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return reqs[a].bytes > reqs[b].bytes; });

  std::vector<size_t> placed;  // request indices already given an offset
  for (size_t i : order) {
    const ArenaRequest& r = reqs[i];
    const size_t size = rounded(r.bytes);
    if (size == 0) continue;  // empty buffers share offset 0 harmlessly
    // Busy byte ranges of placed buffers alive at the same time, by offset.
    std::vector<std::pair<size_t, size_t>> busy;
    for (size_t j : placed) {
      const ArenaRequest& q = reqs[j];
      if (q.first <= r.last && r.first <= q.last)
        busy.emplace_back(out.offsets[j], out.offsets[j] + rounded(q.bytes));
    }
    std::sort(busy.begin(), busy.end());
    size_t offset = 0;
    for (const auto& [lo, hi] : busy) {
      if (lo >= offset + size) break;  // the gap before this range fits
      offset = std::max(offset, hi);
    }
    out.offsets[i] = offset;
    out.total = std::max(out.total, offset + size);
    placed.push_back(i);
  }
  return out;
}

}  // namespace luminal::cuda
