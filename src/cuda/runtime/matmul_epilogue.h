// A bias-add / ReLU pass over a matmul result, for epilogues cuBLASLt cannot fuse for a dtype.
#pragma once

#include <map>
#include <string>

#include "cuda/runtime/handles.h"
#include "luminal/dtype.h"

namespace luminal::cuda {

/// CUDA source of `luminal_matmul_epilogue(T* c, const T* bias, long long total, long long n, int
/// relu)`: c[i] += bias[i % n] (when bias is not null), then c[i] *= (0 < c[i]) when relu (the
/// graph's relu, NaN-preserving). One thread per element of the contiguous result.
std::string matmul_epilogue_source(DType dt);

/// The epilogue kernels of one device, compiled (through the JIT cache) and loaded on first use.
class EpilogueKernels {
 public:
  /// Kernels for an NVRTC target ("sm_90").
  explicit EpilogueKernels(std::string target) : target_(std::move(target)) {}
  /// The kernel for dt; the device's context must be current.
  CUfunction get(DType dt);

 private:
  std::string target_;
  std::map<DType, ModuleHandle> modules_;
  std::map<DType, CUfunction> functions_;
};

}  // namespace luminal::cuda
