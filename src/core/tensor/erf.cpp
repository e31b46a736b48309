// erf, erfc and the exact (erf) GELU, built from primitives (there is no erf primitive).
//
//   |x| < 1:  erf(x) = x * P(x^2)              P: degree 5, near-minimax, fitted by
//                                              tools/fit_erf.py
//   |x| >= 1: erfc(a) = t * exp(-a^2 + R(t))   t = 1 / (1 + a/2), a = |x|: Numerical Recipes'
//                                              erfcc (fractional error < 1.2e-7 for all a >= 0)
//
// Error bound (f32, every primitive rounded to f32 as the reference runtime computes; measured by
// tools/fit_erf.py over 2e6 points of [-6, 6] against float64 math.erf): |erf - exact| <= 1.2e-7
// absolute (2 ulp just below erf(1) = 0.84). erfc is relative-accurate for x >= 1 (R(t)'s 1.2e-7
// plus exp's argument rounding), so gelu_erf of negative inputs keeps its digits where
// 1 + erf(x) would cancel.
#include <array>
#include <numbers>

#include "core/tensor/helpers.h"

namespace luminal {

namespace {

constexpr double kSmall = 1.0;  // below: the odd polynomial; above: via erfc
constexpr std::array<double, 6> kP = {
    1.128379128615391,     -0.37612355771358635, 0.11280412126534546,
    -0.026717719398297278, 0.00492480159132488,  -0.00056601993981254622,
};
// Numerical Recipes in C, 2nd ed., section 6.2 (erfcc): R(t), lowest order first.
constexpr std::array<double, 10> kR = {
    -1.26551223, 1.00002368,  0.37409196, 0.09678418,  -0.18628806,
    0.27886807,  -1.13520398, 1.48851587, -0.82215223, 0.17087277,
};

template <size_t N>
GraphTensor horner(const std::array<double, N>& c, const GraphTensor& v) {
  GraphTensor p = detail::scalar_like(v, c[N - 1]);
  for (size_t i = N - 1; i-- > 0;) p = p * v + c[i];
  return p;
}

// The two branches, both finite for every input (the polynomial reads x clamped to +-1, so an
// infinite x cannot make 0 * inf in the select).
struct ErfParts {
  GraphTensor small;     // x * P(x^2), valid where |x| < 1
  GraphTensor erfc_a;    // erfc(|x|), valid where |x| >= 1
  GraphTensor is_small;  // |x| < 1 (Bool)
};

ErfParts erf_parts(const GraphTensor& x, std::string_view op) {
  detail::graph_of(x, op);
  detail::require_float(op, x);
  const GraphTensor a = x.abs();
  const GraphTensor xs =
      x.maximum(detail::scalar_like(x, -kSmall)).minimum(detail::scalar_like(x, kSmall));
  const GraphTensor t = ((a * 0.5) + 1.0).recip();
  const GraphTensor erfc_a = t * (horner(kR, t) - a * a).exp();
  return {xs * horner(kP, xs * xs), erfc_a, a.lt(kSmall)};
}

// +1 / -1 by the sign of x (0 maps to +1; only used where |x| >= 1).
GraphTensor sign_pm1(const GraphTensor& x) {
  return detail::select(x.lt(0.0), detail::scalar_like(x, -1.0), detail::scalar_like(x, 1.0));
}

}  // namespace

// erf(x) = x P(x^2) below 1, sign(x) (1 - erfc(|x|)) above.
GraphTensor GraphTensor::erf() const {
  const ErfParts p = erf_parts(*this, "erf");
  return detail::select(p.is_small, p.small, sign_pm1(*this) * (1.0 - p.erfc_a));
}

// erfc(x) = 1 - x P(x^2) below 1; erfc(|x|) for x >= 1 and 2 - erfc(|x|) for x <= -1.
GraphTensor GraphTensor::erfc() const {
  const ErfParts p = erf_parts(*this, "erfc");
  const GraphTensor large = detail::select(lt(0.0), 2.0 - p.erfc_a, p.erfc_a);
  return detail::select(p.is_small, 1.0 - p.small, large);
}

// gelu(x) = x/2 * (1 + erf(x / sqrt 2)) = x/2 * erfc(-x / sqrt 2).
GraphTensor GraphTensor::gelu_erf() const {
  detail::require_float("gelu_erf", *this);
  return *this * 0.5 * (*this * -std::numbers::sqrt2 / 2).erfc();
}

}  // namespace luminal
