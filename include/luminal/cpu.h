// The CPU backend: generated kernels compiled to native code by the system C++ compiler (cached
// on disk), matmuls on oneDNN, work split over OpenMP's persistent thread pool. Compile a graph
// for it with compile(g, cpu::backend(options)) (luminal/compile.h); device "cpu" names it.
#pragma once

#include <cstddef>
#include <memory>
#include <string>

#include "luminal/backend.h"

namespace luminal::cpu {

/// Options of the CPU backend: what changes the plans it builds is in options_key() (and so in
/// the plan-cache key).
struct CpuOptions {
  int threads = 0;                  // worker threads (0: OpenMP's default, usually every core)
  std::string compiler = "c++";     // the C++ compiler generated kernels are built with
  /// Its flags: no FMA contraction (results equal eager PyTorch's elementwise rounding); `omp simd`
  /// loops with glibc's vector math (linked with -lmvec), 512-bit vectors where the CPU has them.
  std::string flags = "-O3 -march=native -ffp-contract=off -fno-math-errno -fno-trapping-math -fopenmp-simd "
                      "-mprefer-vector-width=512";
  bool poison = false;              // fill outputs and intermediates with 0xFF before every run
  bool profile = false;             // time every step; stats() then lists each step's mean time
  /// Bytes of constant (persisted) weights a plan may keep reordered into oneDNN's blocked layout
  /// (0: matmuls read the weights as bound, every call).
  size_t packed_weight_bytes = size_t(1) << 30;
};

/// One line about the host: "Intel(R) Xeon(R) ... (2 threads, avx512_bf16 amx)".
std::string host_description();

/// The CPU backend for these options. Throws "[cpu] ..." for bad options (threads < 0, an empty
/// compiler).
std::shared_ptr<const Backend> backend(const CpuOptions& options = {});

}  // namespace luminal::cpu
