// Layout of the one pinned region (mirrored by one device block) that holds every staged host
// input of a plan. Plain C++, header-only, so it is unit-tested without a GPU or CUDA build.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace luminal::cuda {

/// Slots in key order, each starting on an `align` boundary; slot k is [offset(k), offset(k) +
/// capacity(k)). Growing a slot moves every later one (the caller then re-creates the region).
class StagingLayout {
 public:
  /// A layout of `capacities.size()` slots.
  explicit StagingLayout(std::vector<size_t> capacities = {}, size_t align = 256)
      : caps_(std::move(capacities)), align_(align) {
    place();
  }
  /// Makes slot k hold at least `bytes` (growing by at least half its size, so a dynamic dim that
  /// creeps up re-lays out rarely). Returns true when any offset or the total changed.
  bool reserve(size_t k, size_t bytes) {
    if (bytes <= caps_.at(k)) return false;
    caps_[k] = std::max(bytes, caps_[k] + caps_[k] / 2);
    place();
    return true;
  }
  /// Start of slot k.
  size_t offset(size_t k) const { return offsets_.at(k); }
  /// Bytes slot k can hold.
  size_t capacity(size_t k) const { return caps_.at(k); }
  /// Number of slots.
  size_t size() const { return caps_.size(); }
  /// Bytes of the whole region (the end of the last slot, rounded to `align`).
  size_t total() const { return total_; }

 private:
  void place() {
    offsets_.resize(caps_.size());
    size_t at = 0;
    for (size_t k = 0; k < caps_.size(); ++k) {
      offsets_[k] = at;
      at = (at + caps_[k] + align_ - 1) / align_ * align_;
    }
    total_ = at;
  }
  std::vector<size_t> caps_, offsets_;
  size_t align_ = 256;
  size_t total_ = 0;
};

}  // namespace luminal::cuda
