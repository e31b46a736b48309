// --bench: repeated generations on the host clock.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "model.h"

namespace llama {

/// One warm-up generation, then `iters` timed ones; prints TTFT and TPOT (mean, p50) and returns
/// them as JSON {"ttft_ms": {"mean", "p50"}, "tpot_ms": {...}, "iters", "new_tokens"}.
nlohmann::json bench(Model& m, const std::vector<int32_t>& prompt, int64_t n, int iters);

}  // namespace llama
