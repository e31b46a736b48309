// Test helpers for RmsNorm: random rows, an independent plain-loop oracle (double math, the
// decomposition's rounding points) and a graph of one norm on either side of the rule.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "custom/rms_norm/op.h"
#include "luminal/nn.h"
#include "luminal/runtime.h"

namespace luminal::norm_test {

/// v rounded to dt (F32, BF16 or F16).
inline float round_to(DType dt, float v) {
  if (dt == DType::BF16) return float(bf16(v));
  if (dt == DType::F16) return float(f16(v));
  return v;
}

/// Inputs of one norm: x [rows, d] and weight [d], already rounded to dtype.
struct Case {
  int64_t rows = 0, d = 0;
  DType dtype = DType::F32;
  double eps = 1e-5;
  std::vector<float> x, w;
  /// "bf16 rows 3 D 100 eps 1e-05" for failure messages.
  std::string describe() const {
    return fmt::format("{} rows {} D {} eps {:g}", dtype_name(dtype), rows, d, eps);
  }
};

/// Random x in [-3, 3) (never zeros: a zero row would hide the eps) and weight around 1.
inline Case random_case(int64_t rows, int64_t d, DType dt, uint32_t seed, double eps = 1e-5) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-3.f, 3.f), uw(0.5f, 1.5f);
  Case c;
  c.rows = rows, c.d = d, c.dtype = dt, c.eps = eps;
  for (int64_t i = 0; i < rows * d; ++i) c.x.push_back(round_to(dt, u(rng)));
  for (int64_t i = 0; i < d; ++i) c.w.push_back(round_to(dt, uw(rng)));
  return c;
}

/// The oracle: y = round(x * 1 / sqrt(mean(x^2) + eps)), out = round(y * w), rounding to dtype.
inline std::vector<double> loops(const Case& c) {
  std::vector<double> out;
  for (int64_t r = 0; r < c.rows; ++r) {
    double ss = 0;
    for (int64_t j = 0; j < c.d; ++j) ss += double(c.x[size_t(r * c.d + j)]) * c.x[size_t(r * c.d + j)];
    const double scale = 1.0 / std::sqrt(ss / double(c.d) + c.eps);
    for (int64_t j = 0; j < c.d; ++j) {
      const float y = round_to(c.dtype, float(c.x[size_t(r * c.d + j)] * scale));
      out.push_back(round_to(c.dtype, y * c.w[size_t(j)]));
    }
  }
  return out;
}

/// "" when got matches want within atol + rtol * |want|, else the first mismatch.
inline std::string mismatch(const std::vector<float>& got, const std::vector<double>& want,
                            double atol, double rtol) {
  if (got.size() != want.size()) return fmt::format("{} values, expected {}", got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i])))
      return fmt::format("element {}: got {} want {}", i, got[i], want[i]);
  return "";
}

/// Tolerances of one dtype: a bf16 / f16 result may differ by one rounding of y or of the output.
inline double rtol_of(DType dt) { return dt == DType::BF16 ? 1.0 / 64 : (dt == DType::F16 ? 1.0 / 512 : 1e-5); }

/// A graph's norm inputs and result.
struct Bound {
  GraphTensor x, w, out;
};

/// x [rows, d] -> custom RmsNorm (fused) or nn::rms_norm (the decomposition), marked as output.
inline Bound build(Graph& g, const Case& c, bool fused) {
  Bound b;
  b.x = g.named_tensor("x", {c.rows, c.d}, c.dtype);
  b.w = g.named_tensor("w", {c.d}, c.dtype);
  b.out = fused ? custom_op(std::make_shared<custom::RmsNorm>(c.eps), {b.x, b.w})
                : nn::rms_norm(b.x, b.w, c.eps);
  b.out.output();
  return b;
}

/// Sets a float tensor from host floats in its dtype.
inline void set_floats(Runtime& rt, const GraphTensor& t, const std::vector<float>& v, DType dt) {
  if (dt == DType::F32) return rt.set_data(t, std::span<const float>(v));
  if (dt == DType::BF16) {
    std::vector<bf16> h(v.begin(), v.end());
    return rt.set_data(t, std::span<const bf16>(h));
  }
  std::vector<f16> h(v.begin(), v.end());
  rt.set_data(t, std::span<const f16>(h));
}

/// Sets x and w of b from c.
inline void set_inputs(Runtime& rt, const Bound& b, const Case& c) {
  set_floats(rt, b.x, c.x, c.dtype);
  set_floats(rt, b.w, c.w, c.dtype);
}

}  // namespace luminal::norm_test
