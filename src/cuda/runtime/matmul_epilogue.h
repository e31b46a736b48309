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

/// CUDA source of `luminal_tf32_split`: hi[i] = x[i] rounded to TF32 (10 mantissa bits, nearest
/// even; truncated where rounding would overflow), lo[i] = x[i] - hi[i] (exact in fp32); inf and
/// NaN pass to hi with lo = 0. The operands of a TF32x3 matmul.
std::string tf32_split_source();

/// The epilogue kernels of one device, compiled (through the JIT cache) and loaded on first use.
class EpilogueKernels {
 public:
  /// Kernels for an NVRTC target ("sm_90").
  explicit EpilogueKernels(std::string target) : target_(std::move(target)) {}
  /// The kernel for dt; the device's context must be current.
  CUfunction get(DType dt);
  /// `luminal_tf32_split(const float* x, float* hi, float* lo, long long n)` (tf32_split_source).
  CUfunction tf32_split();

 private:
  /// Compiles and loads `entry` of `source` into `module`; its function.
  CUfunction load(const std::string& source, const char* entry, const char* what, ModuleHandle& module);
  ModuleHandle split_module_;
  CUfunction split_fn_ = nullptr;
  std::string target_;
  std::map<DType, ModuleHandle> modules_;
  std::map<DType, CUfunction> functions_;
};

}  // namespace luminal::cuda
