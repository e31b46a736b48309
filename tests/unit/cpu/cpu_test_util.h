// Helpers the CPU backend's unit tests share.
#pragma once

#include <memory>

#include "luminal/compile.h"
#include "luminal/cpu.h"

namespace luminal::cpu_test {

/// g compiled for the CPU backend with outputs poisoned before every run and no search (the
/// default plan: the rules' first available alternatives, host kernels included).
inline std::unique_ptr<Executable> cpu_plan(const Graph& g) {
  cpu::CpuOptions o;
  o.poison = true;
  CompileOptions co;
  co.search.enabled = false;
  return compile(g, cpu::backend(o), co);
}

}  // namespace luminal::cpu_test
