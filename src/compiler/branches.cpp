// Hazard analysis and stream assignment for graph branches (see branches.h).
#include "compiler/branches.h"

#include <algorithm>

namespace luminal::compiler {
namespace {

bool overlaps(const std::vector<ByteRange>& a, const std::vector<ByteRange>& b) {
  for (const ByteRange& x : a)
    for (const ByteRange& y : b)
      if (x.begin < y.end && y.begin < x.end) return true;
  return false;
}

}  // namespace

bool conflicts(const StepAccess& earlier, const StepAccess& later) {
  return overlaps(earlier.writes, later.reads) || overlaps(earlier.writes, later.writes) ||
         overlaps(earlier.reads, later.writes);
}

namespace {

/// A set of step indices as bits.
class StepSet {
 public:
  explicit StepSet(size_t n) : words_((n + 63) / 64, 0) {}
  void add(int i) { words_[size_t(i) / 64] |= uint64_t{1} << (i % 64); }
  bool has(int i) const { return (words_[size_t(i) / 64] >> (i % 64)) & 1; }
  void merge(const StepSet& o) {
    for (size_t w = 0; w < words_.size(); ++w) words_[w] |= o.words_[w];
  }

 private:
  std::vector<uint64_t> words_;
};

}  // namespace

std::vector<BranchSlot> schedule_branches(const std::vector<StepAccess>& steps, int max_streams) {
  const size_t n = steps.size();
  max_streams = std::max(max_streams, 1);
  std::vector<BranchSlot> slots(n);
  std::vector<StepSet> ancestors(n, StepSet(n));   // every step j transitively waits for
  std::vector<int> tail(size_t(max_streams), -1);  // last step on each stream
  for (size_t jj = 0; jj < n; ++jj) {
    const int j = int(jj);
    if (!steps[jj].launches) continue;
    std::vector<int> deps;
    for (int i = j - 1; i >= 0; --i) {
      if (!steps[size_t(i)].launches || ancestors[jj].has(i)) continue;
      if (!conflicts(steps[size_t(i)], steps[jj])) continue;
      deps.push_back(i);  // direct: not implied by a later dependency (scanned downwards)
      ancestors[jj].add(i);
      ancestors[jj].merge(ancestors[size_t(i)]);
    }
    // A stream whose tail j depends on (or an empty one) adds no false edge; prefer the most
    // recent tail, which keeps a chain on one stream. Otherwise the stream idle the longest.
    int best = -1, empty = -1;
    for (int s = 0; s < max_streams; ++s) {
      const int t = tail[size_t(s)];
      if (t < 0) {
        if (empty < 0) empty = s;
      } else if (ancestors[jj].has(t) && (best < 0 || t > tail[size_t(best)])) {
        best = s;
      }
    }
    if (best < 0) best = empty;
    if (best < 0) {
      best = 0;
      for (int s = 1; s < max_streams; ++s)
        if (tail[size_t(s)] < tail[size_t(best)]) best = s;
    }
    const int t = tail[size_t(best)];
    if (t >= 0 && !ancestors[jj].has(t)) {  // a false edge through stream order
      ancestors[jj].add(t);
      ancestors[jj].merge(ancestors[size_t(t)]);
    }
    BranchSlot& slot = slots[jj];
    slot.stream = best;
    for (int d : deps)
      if (d != t && !(t >= 0 && ancestors[size_t(t)].has(d))) slot.waits.push_back(d);
    std::sort(slot.waits.begin(), slot.waits.end());
    tail[size_t(best)] = j;
  }
  return slots;
}

std::vector<int> earliest_start(const std::vector<StepBuffers>& steps) {
  std::vector<int> earliest(steps.size(), 0);
  std::vector<int> last_writer;  // per buffer
  for (size_t j = 0; j < steps.size(); ++j) {
    for (int b : steps[j].reads)
      if (size_t(b) < last_writer.size() && last_writer[size_t(b)] >= 0)
        earliest[j] = std::max(earliest[j], last_writer[size_t(b)] + 1);
    for (int b : steps[j].writes) {
      if (size_t(b) >= last_writer.size()) last_writer.resize(size_t(b) + 1, -1);
      last_writer[size_t(b)] = int(j);
    }
  }
  return earliest;
}

int streams_used(const std::vector<BranchSlot>& slots, const std::vector<StepAccess>& steps) {
  int used = 0;
  for (size_t i = 0; i < slots.size(); ++i)
    if (steps[i].launches) used = std::max(used, slots[i].stream + 1);
  return used;
}

int lead_stream(const std::vector<BranchSlot>& slots, const std::vector<StepAccess>& steps) {
  std::vector<int> count;   // per stream: launching steps before its first join
  std::vector<bool> joined;  // a step of the stream waited for another stream's
  for (size_t i = 0; i < slots.size(); ++i) {
    if (!steps[i].launches) continue;
    const size_t s = size_t(slots[i].stream);
    if (s >= count.size()) count.resize(s + 1, 0), joined.resize(s + 1, false);
    joined[s] = joined[s] || !slots[i].waits.empty();
    if (!joined[s]) ++count[s];
  }
  return count.empty() ? 0 : int(std::max_element(count.begin(), count.end()) - count.begin());
}

}  // namespace luminal::compiler
