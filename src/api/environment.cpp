// The documented environment variables (docs/options.md), read into options at the boundary.
#include "luminal/environment.h"

#include <fmt/format.h>

#include <charconv>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <string_view>

namespace luminal {
namespace {

// The variable's value, or nullptr when unset or empty.
const char* value(const char* name) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? v : nullptr;
}

void set_flag(const char* name, bool& field) {
  const char* v = value(name);
  if (v == nullptr) return;
  const std::string_view s(v);
  if (s != "0" && s != "1")
    throw std::invalid_argument(fmt::format("[env] {}={}: expected 0 or 1", name, s));
  field = s == "1";
}

void set_int(const char* name, int& field, int lo, int hi) {
  const char* v = value(name);
  if (v == nullptr) return;
  const std::string_view s(v);
  int x = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), x);
  if (ec != std::errc{} || end != s.data() + s.size() || x < lo || x > hi)
    throw std::invalid_argument(
        fmt::format("[env] {}={}: expected an integer in [{}, {}]", name, s, lo, hi));
  field = x;
}

}  // namespace

void apply_environment(CompileOptions& opts) {
  set_flag("LUMINAL_SEARCH", opts.search.enabled);
  set_flag("LUMINAL_PLAN_CACHE", opts.plan_cache);
  if (const char* v = value("LUMINAL_RULES")) opts.alternative = v;  // checked by compile()
}

void apply_environment(cuda::CudaOptions& opts) {
  set_int("LUMINAL_GRAPH_BRANCHES", opts.graph_branches, 1, 64);
  set_flag("LUMINAL_BRANCH_PRIORITIES", opts.branch_priorities);
  set_flag("LUMINAL_MATMUL_AUTOTUNE", opts.matmul_autotune);
  set_flag("LUMINAL_GEMV", opts.gemv.enabled);
  set_int("LUMINAL_GEMV_LOADS", opts.gemv.loads, 2, 16);   // cuda::backend checks the set
  set_int("LUMINAL_GEMV_SPLITS", opts.gemv.splits, 0, 8);  // likewise
  set_flag("LUMINAL_GEMV_GROUP", opts.gemv.group);
  set_flag("LUMINAL_GEMV_RESIDUAL", opts.gemv.residual);
  set_flag("LUMINAL_STAGED_IN_GRAPH", opts.staged_in_graph);
  set_flag("LUMINAL_CUDA_POISON", opts.poison);
}

void apply_process_environment() {
  cuda::CudaEnvironment env;
  if (const char* v = value("LUMINAL_CUDA_DRIVER")) env.driver_library = v;
  if (const char* v = value("LUMINAL_CUDA_INCLUDE")) {
    std::string_view list(v);
    while (!list.empty()) {
      const size_t p = list.find(':');
      if (const std::string_view item = list.substr(0, p); !item.empty())
        env.include_dirs.emplace_back(item);
      list = p == std::string_view::npos ? std::string_view{} : list.substr(p + 1);
    }
  }
  set_flag("LUMINAL_JIT_DISK_CACHE", env.jit_disk_cache);
  cuda::set_environment(env);
}

}  // namespace luminal
