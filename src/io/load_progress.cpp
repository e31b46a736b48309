// The progress line of a checkpoint load.
#include "io/load_progress.h"

#include <fmt/format.h>

namespace luminal::io {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

double gb_per_s(uint64_t bytes, double s) { return s > 0 ? double(bytes) / s / 1e9 : 0.0; }

}  // namespace

std::string format_bytes(uint64_t bytes) {
  if (bytes >= (uint64_t{1} << 30))
    return fmt::format("{:.1f} GiB", double(bytes) / double(1 << 30));
  if (bytes >= (uint64_t{1} << 20))
    return fmt::format("{:.1f} MiB", double(bytes) / double(1 << 20));
  return fmt::format("{} bytes", bytes);
}

LoadProgress::LoadProgress(uint64_t total, bool enabled, std::FILE* out, uint64_t min_bytes)
    : total_(total),
      enabled_(enabled),
      bar_(enabled && total >= min_bytes),
      out_(out),
      start_(Clock::now()),
      last_draw_(start_) {}

void LoadProgress::add(uint64_t bytes) {
  done_ += bytes;
  if (!bar_) return;
  const Clock::time_point now = Clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(100) && done_ < total_) return;
  last_draw_ = now;
  draw();
}

void LoadProgress::draw() {
  const double pct = total_ > 0 ? 100.0 * double(done_) / double(total_) : 100.0;
  const double gb = 1.0 / double(uint64_t{1} << 30);
  fmt::print(out_, "\r[load] {:.1f} / {:.1f} GiB  {:3.0f}%  {:.1f} GB/s", double(done_) * gb,
             double(total_) * gb, pct, gb_per_s(done_, seconds_since(start_)));
  std::fflush(out_);
}

void LoadProgress::finish(size_t tensors, const std::string& tail) {
  if (!enabled_) return;
  const double s = seconds_since(start_);
  if (bar_) fmt::print(out_, "\n");
  fmt::print(out_, "[load] {} tensors, {} in {:.2f} s ({:.1f} GB/s){}\n", tensors,
             format_bytes(done_), s, gb_per_s(done_, s), tail);
  std::fflush(out_);
}

}  // namespace luminal::io
