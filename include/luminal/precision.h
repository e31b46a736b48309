// Numeric precision of a model: an explicit compile option, never a silent change (DESIGN.md
// section 10).
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

#include "luminal/dtype.h"

namespace luminal {

/// F32: exact fp32. TF32: fp32 tensors, matmuls on tensor cores with TF32 inputs (CUDA only; the
/// CPU runtime stays exact). BF16: bf16 weights and activations, fp32 accumulation. Int8: embedding
/// tables row-wise quantized to uint8 (per-row fp32 scale and bias), everything else as BF16.
/// FP8: Int8's tables and bf16 activations, and the GEMMs over constant weights on FP8 tensor
/// cores (CUDA sm_89+): weights e4m3 per output channel, activations e4m3 per row, fp32
/// accumulation, bf16 out. TF32X3: fp32 tensors, each f32 GEMM as three TF32 tensor-core products
/// of its operands split into TF32 high and low parts (hi*hi + hi*lo + lo*hi): fp32 accuracy at
/// tensor-core speed (CUDA; the CPU runtime stays exact).
enum class Precision : uint8_t { F32, TF32, BF16, Int8, FP8, TF32X3 };

/// "fp32", "tf32", "bf16", "int8" or "fp8" (what parse_precision accepts).
inline std::string_view precision_name(Precision p) {
  switch (p) {
    case Precision::F32:
      return "fp32";
    case Precision::TF32:
      return "tf32";
    case Precision::BF16:
      return "bf16";
    case Precision::Int8:
      return "int8";
    case Precision::FP8:
      return "fp8";
    case Precision::TF32X3:
      return "tf32x3";
  }
  return "?";
}

/// Parses "fp32|tf32|tf32x3|bf16|int8|fp8"; anything else throws "[precision] unknown precision
/// '...'".
inline Precision parse_precision(std::string_view s) {
  for (Precision p : {Precision::F32, Precision::TF32, Precision::TF32X3, Precision::BF16,
                      Precision::Int8, Precision::FP8}) {
    if (s == precision_name(p)) return p;
  }
  throw std::invalid_argument("[precision] unknown precision '" + std::string(s) +
                              "' (expected fp32, tf32, tf32x3, bf16, int8 or fp8)");
}

/// True when weights and activations stay fp32 (F32, TF32, TF32X3: only the GEMMs' math differs).
inline bool fp32_tensors(Precision p) {
  return p == Precision::F32 || p == Precision::TF32 || p == Precision::TF32X3;
}

/// True when embedding tables are row-wise uint8 at this precision (Int8 and FP8).
inline bool int8_tables(Precision p) { return p == Precision::Int8 || p == Precision::FP8; }

/// The dtype of weights and activations at this precision: BF16 for BF16, Int8 and FP8, else F32.
inline DType activation_dtype(Precision p) {
  return p == Precision::BF16 || int8_tables(p) ? DType::BF16 : DType::F32;
}

}  // namespace luminal
