// Dim buckets (shared/DESIGN.md section 9): ranges of a dynamic dim, one searched plan each.
#pragma once

#include <cstdint>
#include <vector>

namespace luminal::compiler::search {

/// A range of values of one dynamic dim served by one compiled plan.
struct DimBucket {
  int64_t min = 1, max = 1;
  /// The value the bucket's plan is compiled, searched and sized for: max (every v in the bucket
  /// fits its buffers). Throws std::out_of_range "[bucket] v outside [min, max]".
  int64_t representative(int64_t v) const;
  /// min <= v <= max.
  bool contains(int64_t v) const { return min <= v && v <= max; }
};

/// Power-of-two buckets covering [lo, hi]: [1,1],[2,2],[3,4],[5,8],... (each ends at a power of
/// two), the first starting at lo, the last ending at hi. Throws std::invalid_argument for lo < 1
/// or hi < lo.
std::vector<DimBucket> pow2_buckets(int64_t lo, int64_t hi);

/// The index of the bucket holding v (binary search over sorted, disjoint buckets), or -1.
int find_bucket(const std::vector<DimBucket>& buckets, int64_t v);

}  // namespace luminal::compiler::search
