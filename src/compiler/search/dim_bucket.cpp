// Dim buckets: power-of-two ranges, so a plan serves at most twice the work it is sized for.
#include "compiler/search/dim_bucket.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <stdexcept>

namespace luminal {

int64_t DimBucket::representative(int64_t v) const {
  if (!contains(v))
    throw std::out_of_range(fmt::format("[bucket] {} outside [{}, {}]", v, min, max));
  return max;
}

std::vector<DimBucket> pow2_buckets(int64_t lo, int64_t hi) {
  if (lo < 1 || hi < lo)
    throw std::invalid_argument(
        fmt::format("[bucket] bad range [{}, {}] (need 1 <= lo <= hi)", lo, hi));
  std::vector<DimBucket> out;
  for (int64_t start = lo;;) {
    // In unsigned arithmetic: bit_ceil of a value above 2^62 is 2^63, past int64_t.
    const uint64_t p = std::bit_ceil(uint64_t(start));
    const int64_t end = p > uint64_t(hi) ? hi : int64_t(p);
    out.push_back({start, end});
    if (end == hi) break;  // before start = end + 1, which could overflow at INT64_MAX
    start = end + 1;
  }
  return out;
}

void BucketOptions::validate() const {
  if (dim.empty()) return;
  if (ranges.empty())
    throw std::invalid_argument(fmt::format("[bucket] dim '{}' has no ranges", dim));
  for (size_t i = 0; i < ranges.size(); ++i) {
    const DimBucket& b = ranges[i];
    if (b.min > b.max)
      throw std::invalid_argument(fmt::format("[bucket] range [{}, {}] is empty", b.min, b.max));
    if (i > 0 && ranges[i - 1].max >= b.min)
      throw std::invalid_argument(fmt::format(
          "[bucket] ranges [{}, {}] and [{}, {}] overlap or are out of order", ranges[i - 1].min,
          ranges[i - 1].max, b.min, b.max));
  }
}

int find_bucket(const std::vector<DimBucket>& buckets, int64_t v) {
  auto it = std::lower_bound(buckets.begin(), buckets.end(), v,
                             [](const DimBucket& b, int64_t x) { return b.max < x; });
  if (it == buckets.end() || !it->contains(v)) return -1;
  return int(it - buckets.begin());
}

}  // namespace luminal
