// The CPU backend's matmul step: C[b] = A[b] @ B[b] (+ bias, ReLU) on oneDNN's matmul primitive,
// strided views read in place. bf16 / f16 where oneDNN has no primitive for this CPU (AVX2 without
// AVX-512 BF16) run an f32 primitive on widened copies; f64 runs a plain loop with a wide accumulator. One row against k-contiguous weights (a
// decode step) may run host_gemv.h's kernel instead, whichever was faster at the shape's first run.
// Constant weights (a nonzero version) from 16 rows up: primitives reading a packed copy
// (weight_pack.h) are timed against the plain one at the shape's first run; the fastest stays.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "compiler/kernel_plan.h"
#include "cpu/host_int8_matmul.h"
#include "cpu/weight_pack.h"

namespace luminal::cpu {

/// One MatmulStep, its oneDNN primitives created per distinct dims and reused. With int8 GEMMs on
/// (compile precision int8), shapes with constant weights and 16 rows or more may run
/// host_int8_matmul.h's GEMM instead.
class HostMatmul {
 public:
  /// Which oneDNN primitive runs a shape with constant weights: the fastest at its first run, or
  /// one named (tests): the weights as bound, or a packed copy read through 3-d / 2-d descriptors.
  enum class Layout { timed, plain, packed_3d, packed_2d };
  /// Int8 GEMMs (compile precision int8): never, where faster at a shape's first run, or always
  /// where they apply (tests).
  enum class Int8 { off, timed, always };
  /// A step whose optional bias buffer holds `bias_dtype`; constant weights are packed into `packs`
  /// (the plan's; nullptr: never).
  HostMatmul(const compiler::MatmulStep& step, DType bias_dtype, WeightPacks* packs = nullptr,
             Layout layout = Layout::timed, Int8 int8 = Int8::off);
  ~HostMatmul();
  HostMatmul(const HostMatmul&) = delete;
  HostMatmul& operator=(const HostMatmul&) = delete;

  /// Runs with the dims of this execute; a, b, c, bias are the buffers' base addresses;
  /// `b_version` is b's input version (weight_pack.h; 0: b may change between calls).
  void run(const DynMap& dyn, const std::byte* a, const std::byte* b, std::byte* c,
           const std::byte* bias, uint64_t b_version = 0);
  /// "onednn brg:avx512_core" (the implementation of the last run), "gemv" or "loop".
  std::string implementation() const { return impl_; }

 private:
  struct Shape;
  struct Prepared;
  void prepare(const Shape& s, Prepared& p);
  void choose_library(const Shape& s, Prepared& p, const std::byte* a, const std::byte* b, std::byte* c,
                      const std::byte* bias);
  /// The float path: oneDNN, widened oneDNN or the loop, whichever prepare() set up.
  void run_library(const Shape& s, Prepared& p, const std::byte* a, const std::byte* b, std::byte* c,
                   const std::byte* bias);
  /// The int8 GEMM on this call's weights (quantized again if they changed); false: a NaN / inf.
  bool run_int8(const Shape& s, Prepared& p, const std::byte* a, const std::byte* b, std::byte* c,
                const std::byte* bias);
  void choose_int8(const Shape& s, Prepared& p, const std::byte* a, const std::byte* b, std::byte* c,
                   const std::byte* bias);
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
  WeightPacks* packs_;
  Layout layout_;
  Int8 int8_;
  std::unique_ptr<Int8Weights> int8_weights_;  // the step's weights quantized (int8 shapes share them)
  std::map<std::vector<int64_t>, std::unique_ptr<Prepared>> prepared_;
  std::string impl_ = "not run";
};

}  // namespace luminal::cpu
