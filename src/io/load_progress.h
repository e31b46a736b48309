// The progress line of a checkpoint load (internal).
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace luminal::io {

/// "96.1 GiB", "12.0 MiB" or "512 bytes": sizes for load messages.
std::string format_bytes(uint64_t bytes);

/// A one-line progress bar ("\r[load] 12.3 / 40.0 GiB  31%  5.2 GB/s") redrawn at most 10 times a
/// second, shown only when enabled and the load is at least `min_bytes`; finish() ends it with a
/// summary line whenever enabled.
class LoadProgress {
 public:
  /// Loads under this many bytes get no bar (only the summary).
  static constexpr uint64_t kMinBytes = uint64_t{1} << 30;
  /// A progress line for a load of `total` bytes written to `out`.
  LoadProgress(uint64_t total, bool enabled, std::FILE* out = stderr,
               uint64_t min_bytes = kMinBytes);
  /// Counts `bytes` more bytes loaded; redraws when 100 ms passed since the last draw.
  void add(uint64_t bytes);
  /// Ends the bar and prints "[load] <tensors> tensors, X GiB in Ys (Z GB/s)<tail>".
  void finish(size_t tensors, const std::string& tail = {});

 private:
  void draw();
  using Clock = std::chrono::steady_clock;
  uint64_t total_ = 0, done_ = 0;
  bool enabled_ = false, bar_ = false;
  std::FILE* out_ = nullptr;
  Clock::time_point start_, last_draw_;
};

}  // namespace luminal::io
