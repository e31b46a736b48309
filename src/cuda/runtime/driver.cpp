// Loads libcuda.so.1 at first use and resolves the driver entry points into a table.
#include "cuda/runtime/driver.h"

#include <dlfcn.h>
#include <fmt/format.h>

#include <cstdlib>
#include <stdexcept>

namespace luminal::cuda {
namespace {

struct LoadedDriver {
  Driver table;
  std::string problem;  // empty when the driver is usable
};

LoadedDriver load_driver() {
  LoadedDriver out;
  // CudaEnvironment::driver_library names another driver library (a test double, a driver outside
  // the loader path). RTLD_LOCAL: the symbols are only reached through this table. Never closed.
  const std::string& configured = environment().driver_library;
  const char* lib_name = configured.empty() ? "libcuda.so.1" : configured.c_str();
  void* lib = dlopen(lib_name, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* err = dlerror();
    out.problem = fmt::format("no CUDA driver ({})", err ? err : lib_name);
    return out;
  }
#define LUMINAL_CU_RESOLVE(name)                                                        \
  out.table.name = reinterpret_cast<decltype(&::name)>(dlsym(lib, #name));              \
  if (out.table.name == nullptr) {                                                      \
    out.problem = fmt::format("the CUDA driver is too old: {} lacks " #name, lib_name); \
    return out;                                                                         \
  }
  LUMINAL_CU_FUNCTIONS(LUMINAL_CU_RESOLVE)
#undef LUMINAL_CU_RESOLVE
  CUresult r = out.table.cuInit(0);
  if (r != CUDA_SUCCESS) {
    const char* name = nullptr;
    const char* text = nullptr;
    out.table.cuGetErrorName(r, &name);
    out.table.cuGetErrorString(r, &text);
    out.problem = fmt::format("cuInit failed: {}: {}", name ? name : "?", text ? text : "?");
  }
  return out;
}

const LoadedDriver& loaded() {
  static const LoadedDriver d = load_driver();  // thread-safe one-time initialization
  return d;
}

// "drv().cuLaunchKernel(fn, ...)" -> "cuLaunchKernel": the quoted call without its object prefix.
std::string_view call_name(std::string_view call) {
  size_t paren = call.find('(');
  std::string_view head = call.substr(0, paren);
  size_t dot = head.find_last_of(".>");
  return dot == std::string_view::npos ? head : head.substr(dot + 1);
}

}  // namespace

const Driver& drv() {
  const LoadedDriver& d = loaded();
  if (!d.problem.empty()) throw std::runtime_error("[cuda] " + d.problem);
  return d.table;
}

const std::string& driver_problem() { return loaded().problem; }

std::string cuda_error_text(CUresult r) {
  const LoadedDriver& d = loaded();
  const char* name = nullptr;
  const char* text = nullptr;
  if (d.table.cuGetErrorName != nullptr) d.table.cuGetErrorName(r, &name);
  if (d.table.cuGetErrorString != nullptr) d.table.cuGetErrorString(r, &text);
  if (name == nullptr) return fmt::format("CUresult {}", static_cast<int>(r));
  return fmt::format("{}: {}", name, text ? text : "");
}

void throw_cuda_error(CUresult r, const char* call, std::string_view context) {
  std::string msg = fmt::format("[cuda] {}(...) failed: {}", call_name(call), cuda_error_text(r));
  if (!context.empty()) msg += fmt::format(" ({})", context);
  throw std::runtime_error(msg);
}

}  // namespace luminal::cuda
