// Owning wrappers of driver handles, so a failed constructor or an exception leaks nothing.
#pragma once

#include <cstdio>
#include <utility>

#include "cuda/runtime/driver.h"

namespace luminal::cuda {

/// Owns a driver handle H, released by Release (errors printed, never thrown).
template <class H, CUresult (*Release)(H) noexcept>
class Handle;

namespace detail {
inline CUresult destroy_stream(CUstream s) noexcept { return drv().cuStreamDestroy_v2(s); }
inline CUresult destroy_graph(CUgraph g) noexcept { return drv().cuGraphDestroy(g); }
inline CUresult destroy_graph_exec(CUgraphExec g) noexcept { return drv().cuGraphExecDestroy(g); }
inline CUresult unload_module(CUmodule m) noexcept { return drv().cuModuleUnload(m); }
inline CUresult destroy_event(CUevent e) noexcept { return drv().cuEventDestroy_v2(e); }
}  // namespace detail

template <class H, CUresult (*Release)(H) noexcept>
class Handle {
 public:
  Handle() = default;
  /// Takes ownership of h.
  explicit Handle(H h) : h_(h) {}
  ~Handle() { reset(); }
  Handle(const Handle&) = delete;
  Handle& operator=(const Handle&) = delete;
  Handle(Handle&& o) noexcept : h_(std::exchange(o.h_, nullptr)) {}
  Handle& operator=(Handle&& o) noexcept {
    if (this != &o) {
      reset();
      h_ = std::exchange(o.h_, nullptr);
    }
    return *this;
  }
  /// The raw handle.
  H get() const { return h_; }
  /// Releases the handle (if any) and holds h instead.
  void reset(H h = nullptr) {
    if (h_ != nullptr) {
      CUresult r = Release(h_);
      if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED)
        std::fprintf(stderr, "[cuda] releasing a handle failed: %s\n", cuda_error_text(r).c_str());
    }
    h_ = h;
  }
  /// True when a handle is held.
  explicit operator bool() const { return h_ != nullptr; }

 private:
  H h_ = nullptr;
};

using StreamHandle = Handle<CUstream, detail::destroy_stream>;
using GraphHandle = Handle<CUgraph, detail::destroy_graph>;
using GraphExecHandle = Handle<CUgraphExec, detail::destroy_graph_exec>;
using ModuleHandle = Handle<CUmodule, detail::unload_module>;
using EventHandle = Handle<CUevent, detail::destroy_event>;

}  // namespace luminal::cuda
