// Tolerances: plans differ in summation order (cuBLASLt vs a generated reduction, split vs fused
// epilogues), so float outputs agree only up to rounding; integers must agree exactly.
#include "compiler/search/output_check.h"

#include <fmt/format.h>

#include <cmath>
#include <cstring>

namespace luminal::compiler::search {
namespace {

struct Tolerance {
  double atol, rtol;
};

Tolerance tolerance(DType dt, Precision p) {
  // fp8 GEMMs: 3-bit mantissas per operand (2^-4 relative each); a plan that runs one product in
  // bf16 (a generated kernel, the GEMV) differs from one that runs it in fp8 by that much.
  if (p == Precision::FP8 && (dt == DType::F32 || dt == DType::BF16)) return {1e-1, 1e-1};
  switch (dt) {
    case DType::F64: return {1e-9, 1e-9};
    // An f32 output of a bf16 / int8 model (DLRM's logit cast back) carries bf16 rounding: two
    // plans that round intermediates at different points differ by bf16 steps, not f32 ones.
    case DType::F32:
      if (p == Precision::BF16 || p == Precision::Int8) return {3e-2, 3e-2};
      return p == Precision::TF32 ? Tolerance{1e-2, 1e-2} : Tolerance{1e-4, 1e-3};  // TF32X3: fp32's
    case DType::F16: return {1e-2, 1e-2};
    case DType::BF16: return {3e-2, 3e-2};
    default: return {0, 0};
  }
}

double element(const std::byte* p, DType dt, size_t i) {
  switch (dt) {
    case DType::F32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case DType::F64: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case DType::F16: { f16 v; std::memcpy(&v, p + 2 * i, 2); return double(float(v)); }
    case DType::BF16: { bf16 v; std::memcpy(&v, p + 2 * i, 2); return double(float(v)); }
    case DType::I32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return double(v); }
    case DType::I64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return double(v); }
    default: return double(std::to_integer<uint8_t>(p[i * dtype_size(dt)]));
  }
}

}  // namespace

std::string compare_output(const ReferenceOutput& ref, const std::vector<std::byte>& got,
                           Precision precision) {
  if (got.size() != ref.bytes.size())
    return fmt::format("output %{}: {} bytes, the default plan's has {}", ref.node, got.size(),
                       ref.bytes.size());
  const size_t n = got.size() / dtype_size(ref.dtype);
  const Tolerance tol = tolerance(ref.dtype, precision);
  double worst = 0;
  size_t worst_i = 0;
  for (size_t i = 0; i < n; ++i) {
    const double want = element(ref.bytes.data(), ref.dtype, i);
    const double have = element(got.data(), ref.dtype, i);
    if (std::isnan(want) && std::isnan(have)) continue;
    if (std::isfinite(want) != std::isfinite(have) || (!std::isfinite(want) && want != have))
      return fmt::format("output %{}[{}] is {}, the default plan's {}", ref.node, i, have, want);
    const double excess = std::abs(have - want) - (tol.atol + tol.rtol * std::abs(want));
    if (excess > worst) worst = excess, worst_i = i;
  }
  if (worst > 0) {
    const double want = element(ref.bytes.data(), ref.dtype, worst_i);
    const double have = element(got.data(), ref.dtype, worst_i);
    return fmt::format("output %{}[{}] is {}, the default plan's {} (|diff| {:.3g} > {} + {} * "
                       "|ref|)",
                       ref.node, worst_i, have, want, std::abs(have - want), tol.atol, tol.rtol);
  }
  return "";
}

}  // namespace luminal::compiler::search
