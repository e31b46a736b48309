// Constant weights reordered once into the layout a oneDNN primitive asks for (format_tag::any:
// blocked for AMX / AVX-512 brgemm), as PyTorch's and oneDNN Graph's weight prepacking do; the
// primitive then reads the packed copy instead of re-blocking the row-major weights every call
// (12-23% on DLRM-v2's bf16 GEMMs, bench/cpu_gemm/onednn_prepack.cpp).
//
// "Constant" is decided by the plan, not guessed: an input's version is nonzero only for owned,
// persisted data (upload / set_buffer of a persisted input), and every such write gives it a new
// version, so a packed copy is reused exactly while the bytes it was made from are unchanged. The
// caller's memory (set_device_ptr) and per-call inputs (host_input) have version 0: never packed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

namespace luminal::cpu {

/// A fresh nonzero version for data just written into an input (process-wide, never reused).
uint64_t next_input_version();

/// One plan's packed weights, shared by its matmul steps, within a byte budget.
class WeightPacks {
 public:
  /// Packs at most `limit_bytes` in all (beyond it, primitives read the plain weights).
  explicit WeightPacks(size_t limit_bytes) : limit_(limit_bytes) {}

  /// True when `owner`'s (a step's) weights laid out as `packed` are held or fit the budget (then
  /// reserved; one more user). A step reads one weight buffer, so packs are keyed by step and layout.
  bool reserve(const void* owner, const dnnl::memory::desc& packed);
  /// One user fewer of a reserved pack; the last one frees it.
  void release(const void* owner, const dnnl::memory::desc& packed);
  /// `owner`'s packed copy of `plain` at `data` (of `version`), reordered now if it was made from
  /// other bytes (a new version or address); reserve() must have said true.
  dnnl::memory& get(const void* owner, const std::byte* data, uint64_t version, const dnnl::memory::desc& plain,
                    const dnnl::memory::desc& packed);
  /// Bytes held in packed copies.
  size_t bytes() const { return bytes_; }

 private:
  struct Pack {
    const void* owner;
    const std::byte* data = nullptr;  // what it was made from (with version)
    dnnl::memory::desc desc;
    uint64_t version = 0;  // 0: reserved, not reordered yet
    dnnl::memory mem;
    int users = 1;
  };
  Pack* find(const void* owner, const dnnl::memory::desc& packed);

  size_t limit_;
  size_t bytes_ = 0;
  std::vector<Pack> packs_;
};

}  // namespace luminal::cpu
