// The CUDA backend's process-wide settings: set once, before the driver or the JIT cache opens.
#include <mutex>
#include <stdexcept>

#include "cuda/runtime/driver.h"

namespace luminal::cuda {
namespace {

struct Settings {
  std::mutex mu;
  CudaEnvironment env;
  bool frozen = false;  // environment() was read: the driver or the JIT cache used it
};

Settings& settings() {
  static Settings s;
  return s;
}

bool same(const CudaEnvironment& a, const CudaEnvironment& b) {
  return a.driver_library == b.driver_library && a.include_dirs == b.include_dirs &&
         a.jit_disk_cache == b.jit_disk_cache;
}

}  // namespace

void set_environment(const CudaEnvironment& env) {
  Settings& s = settings();
  std::lock_guard lock(s.mu);
  if (s.frozen && !same(s.env, env))
    throw std::logic_error(
        "[cuda] set_environment after the CUDA driver or the JIT cache was opened with other "
        "settings (call it first)");
  s.env = env;
}

const CudaEnvironment& environment() {
  Settings& s = settings();
  std::lock_guard lock(s.mu);
  s.frozen = true;
  return s.env;
}

}  // namespace luminal::cuda
