// Timing loops for the dlrm example.
#include "bench.h"


#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <stdexcept>

namespace dlrm {

namespace {

using Clock = std::chrono::steady_clock;

double us_since(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

void call(Model& m, const std::function<void()>& prepare) {
  if (prepare) prepare();
  m.runtime->execute(m.dyn);
}

}  // namespace

Timing summarize(std::vector<double> us) {
  Timing t;
  if (us.empty()) return t;
  std::sort(us.begin(), us.end());
  const auto pct = [&](double p) {
    return us[std::min(us.size() - 1,
                       static_cast<size_t>(std::floor(p * static_cast<double>(us.size()))))];
  };
  t.mean_us = std::accumulate(us.begin(), us.end(), 0.0) / static_cast<double>(us.size());
  t.p50_us = pct(0.50);
  t.p99_us = pct(0.99);
  return t;
}

Timing time_latency(Model& m, const std::function<void()>& prepare, int warmup, int iters) {
  for (int i = 0; i < warmup; ++i) call(m, prepare);
  m.runtime->synchronize();
  std::vector<double> us(static_cast<size_t>(iters));
  for (double& v : us) {
    const Clock::time_point t0 = Clock::now();
    call(m, prepare);
    m.runtime->synchronize();
    v = us_since(t0);
  }
  return summarize(std::move(us));
}

BenchResult bench(Model& m, const std::function<void()>& prepare, int warmup, int iters) {
  if (iters <= 0 || warmup < 0)
    throw std::invalid_argument("[dlrm] --iters must be positive and --warmup >= 0");
  BenchResult r;
  r.iters = iters;
  for (int i = 0; i < warmup; ++i) call(m, prepare);
  m.runtime->synchronize();

  if (!prepare) {
    // The backend's timer around each execute, back to back (CUDA events on CUDA's stream).
    r.events_method = m.runtime->backend().kind() == "cuda" ? "cuda_events" : "host";
    r.events = summarize(m.runtime->execute_timed(m.dyn, iters));
  } else {
    // Host input mode: the uploads must stay outside the timed region.
    r.events_method = "host";
    std::vector<double> ev(static_cast<size_t>(iters));
    for (double& v : ev) {
      if (prepare) prepare();
      const Clock::time_point t0 = Clock::now();
      m.runtime->execute(m.dyn);
      m.runtime->synchronize();
      v = us_since(t0);
    }
    r.events = summarize(std::move(ev));
  }
  r.latency = time_latency(m, prepare, 0, iters);

  const Clock::time_point t0 = Clock::now();
  for (int i = 0; i < iters; ++i) call(m, prepare);
  m.runtime->synchronize();
  r.pipelined_us = us_since(t0) / iters;
  return r;
}

}  // namespace dlrm
