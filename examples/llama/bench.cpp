// --bench: TTFT per generation and TPOT per decode step, pooled over the timed generations.
#include "bench.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace llama {

namespace {

nlohmann::json summary(std::vector<double> v) {
  if (v.empty()) return nullptr;
  std::sort(v.begin(), v.end());
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / static_cast<double>(v.size());
  return {{"mean", mean}, {"p50", v[v.size() / 2]}, {"samples", v.size()}};
}

}  // namespace

nlohmann::json bench(Model& m, const std::vector<int32_t>& prompt, int64_t n, int iters) {
  m.generate(prompt, n);  // warm-up: first-touch allocations, JIT caches on CUDA
  std::vector<double> ttft, tpot;
  for (int i = 0; i < iters; ++i) {
    const Generation g = m.generate(prompt, n);
    ttft.push_back(g.ttft_ms);
    tpot.insert(tpot.end(), g.step_ms.begin(), g.step_ms.end());
  }
  const nlohmann::json t = summary(ttft), p = summary(tpot);
  std::printf("[llama] bench: %d generations of %lld tokens after 1 warm-up (host clock)\n", iters,
              static_cast<long long>(n));
  std::printf("ttft  mean %10.3f ms   p50 %10.3f ms\n", t["mean"].get<double>(),
              t["p50"].get<double>());
  if (!p.is_null())
    std::printf("tpot  mean %10.3f ms   p50 %10.3f ms\n", p["mean"].get<double>(),
                p["p50"].get<double>());
  return {{"ttft_ms", t}, {"tpot_ms", p}, {"iters", iters}, {"new_tokens", n}};
}

}  // namespace llama
