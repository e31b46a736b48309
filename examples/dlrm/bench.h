// Timing of a built DLRM: the three timings of DESIGN.md section 8.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "model.h"

namespace dlrm {

/// Summary of per-call times, in microseconds.
struct Timing {
  double mean_us = 0, p50_us = 0, p99_us = 0;
};

/// Result of bench().
struct BenchResult {
  Timing events;   // device time per call, back to back (host-timed fallback: see events_method)
  Timing latency;  // host clock around prepare + execute + sync
  double pipelined_us = 0;    // iters x (prepare + execute), one sync, per call
  std::string events_method;  // "cuda_events", or "host": execute + sync on the host clock
  int iters = 0;
};

/// mean / p50 / p99 of samples in microseconds.
Timing summarize(std::vector<double> us);

/// Warms up, then times `iters` calls three ways. `prepare` runs before every execute (it sets the
/// inputs in host input mode; it is empty in device mode) and is timed in latency and pipelined.
BenchResult bench(Model& m, const std::function<void()>& prepare, int warmup, int iters);

/// Latency only (prepare + execute + sync per call), for the demo's table.
Timing time_latency(Model& m, const std::function<void()>& prepare, int warmup, int iters);

}  // namespace dlrm
