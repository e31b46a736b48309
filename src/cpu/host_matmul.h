// The CPU backend's matmul step: C[b] = A[b] @ B[b] (+ bias, ReLU) on oneDNN's matmul primitive,
// strided views read in place. bf16 / f16 where oneDNN has no primitive for this CPU (AVX2 without
// AVX-512 BF16) run an f32 primitive on widened copies; f64 runs a plain loop with a wide accumulator. One row against k-contiguous weights (a
// decode step) may run host_gemv.h's kernel instead, whichever was faster at the shape's first run.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/kernel_plan.h"

namespace luminal::cpu {

/// One MatmulStep, its oneDNN primitives created per distinct dims and reused.
class HostMatmul {
 public:
  /// A step whose optional bias buffer holds `bias_dtype`.
  HostMatmul(const compiler::MatmulStep& step, DType bias_dtype);
  ~HostMatmul();
  HostMatmul(const HostMatmul&) = delete;
  HostMatmul& operator=(const HostMatmul&) = delete;

  /// Runs with the dims of this execute; a, b, c, bias are the buffers' base addresses.
  void run(const DynMap& dyn, const std::byte* a, const std::byte* b, std::byte* c,
           const std::byte* bias);
  /// "onednn brg:avx512_core" (the implementation of the last run), "gemv" or "loop".
  std::string implementation() const { return impl_; }

 private:
  struct Shape;
  struct Prepared;
  void run_loop(const Shape& s, const std::byte* a, const std::byte* b, std::byte* c,
                const std::byte* bias) const;
  void run_gemv(const Shape& s, const std::byte* a, const std::byte* b, std::byte* c,
                const std::byte* bias) const;
  void run_onednn(const Shape& s, Prepared& p, const std::byte* a, const std::byte* b, std::byte* c,
                  const std::byte* bias) const;
  void run_widened(const Shape& s, Prepared& p, const std::byte* a, const std::byte* b, std::byte* c,
                   const std::byte* bias) const;
  void choose_gemv(const Shape& s, Prepared& p, const std::byte* a, const std::byte* b, std::byte* c,
                   const std::byte* bias);

  compiler::MatmulStep step_;
  DType bias_dtype_;
  std::map<std::vector<int64_t>, std::unique_ptr<Prepared>> prepared_;
  std::string impl_ = "not run";
};

}  // namespace luminal::cpu
