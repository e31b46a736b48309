// Unary math and powers: neg, abs, exp, log, sqrt, rsqrt, reciprocal, sin, cos, square, pow,
// floor, ceil, round, trunc. The input is cast to the exported result dtype (int -> float for
// exp, sqrt, ...); f16 / bf16 transcendentals compute in f32 and round once, as torch's opmath
// does (exp2(x * log2(e)) with x * log2(e) rounded to f16 would lose ~3 digits).
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "frontend/aten/operands.h"

namespace luminal::aten {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

GraphTensor input(AtenNode& n) {
  const GraphTensor x = n.tensor("self");
  return x.dtype == n.out_dtype() ? x : x.cast(n.out_dtype());
}

GraphTensor constant_like(const GraphTensor& like, double v) {
  return like.graph->constant(v, like.dtype);
}

// f(x) computed in f32 for 16-bit floats, in x's dtype otherwise.
template <class F>
GraphTensor opmath(const GraphTensor& x, F f) {
  if (x.dtype != DType::F16 && x.dtype != DType::BF16) return f(x);
  return f(x.cast(DType::F32)).cast(x.dtype);
}

// f(x) computed one float size up (f16 / bf16 in f32, f32 in f64): powers through
// exp2(e * log2(x)) lose |e * log2(x)| ulps in the dtype they run in.
template <class F>
GraphTensor wide(const GraphTensor& x, F f) {
  if (x.dtype == DType::F64) return f(x);
  return f(x.cast(x.dtype == DType::F32 ? DType::F64 : DType::F32)).cast(x.dtype);
}

template <class F>
void float_unary(AtenNode& n, F f) {
  const GraphTensor x = input(n);
  if (!is_float(x.dtype)) n.fail(fmt::format("needs a float result, got {}", dtype_name(x.dtype)));
  n.set_output(opmath(x, f));
}

// x ** k for k >= 0 by repeated squaring: exact for integers (wrapping like torch) and for
// negative bases, and for k = 2, 3 the same products torch computes.
GraphTensor pow_int(const GraphTensor& x, uint64_t k) {
  if (k == 0) return constant_like(x, 1.0).expand_to(x.dims());
  std::optional<GraphTensor> r;
  GraphTensor base = x;
  for (;;) {
    if (k & 1) r = r ? *r * base : base;
    k >>= 1;
    if (!k) break;
    base = base * base;
  }
  return *r;
}

// C's pow (torch's on the CPU): |x| ** e, negative for a negative base with odd integral e, NaN
// for a finite negative base with non-integral e.
GraphTensor pow_float(const GraphTensor& x, const GraphTensor& e) {
  const GraphTensor r = x.abs().pow(e);
  const GraphTensor inf_e = e.abs().eq(constant_like(e, kInf));  // C counts +-inf as even
  const GraphTensor integral =
      bool_or((e % constant_like(e, 1.0)).eq(constant_like(e, 0.0)), inf_e);
  const GraphTensor odd = (e % constant_like(e, 2.0)).abs().eq(constant_like(e, 1.0));
  const GraphTensor nan = constant_like(x, std::numeric_limits<double>::quiet_NaN());
  // (-inf) ** e is inf ** e for non-integral e (C's pow), not NaN.
  const GraphTensor frac = where(x.eq(constant_like(x, -kInf)), r, nan);
  const GraphTensor v = where(x.lt(0.0), where(integral, where(odd, -r, r), frac), r);
  // 1 where C's pow gives 1 whatever the other operand: x ** 0, 1 ** e, (-1) ** +-inf.
  const GraphTensor one = bool_or(bool_or(e.eq(constant_like(e, 0.0)), x.eq(constant_like(x, 1.0))),
                                  bool_and(x.eq(constant_like(x, -1.0)), inf_e));
  return where(one, constant_like(x, 1.0), v);
}

// trunc(x) = x - fmod(x, 1) (exact: the difference is representable); finite x only.
GraphTensor trunc_finite(const GraphTensor& x) { return x - x % constant_like(x, 1.0); }

GraphTensor floor_finite(const GraphTensor& x) {
  const GraphTensor t = trunc_finite(x);
  return t - x.lt(t).cast(x.dtype);
}

// Integral results of finite x; infinities and NaN pass through unchanged (fmod(inf, 1) is NaN).
template <class F>
void rounding(AtenNode& n, F f) {
  const GraphTensor x = input(n);
  if (!is_float(x.dtype)) return n.set_output(x);  // integers are already integral
  const GraphTensor finite = x.abs().lt(kInf);
  n.set_output(where(finite, f(x), x));
}

// Round half to even: floor, then up when the fraction is > 1/2, or = 1/2 with an odd floor.
GraphTensor round_even(const GraphTensor& x) {
  const GraphTensor f = floor_finite(x);
  const GraphTensor d = x - f;  // in [0, 1), exact
  const GraphTensor odd = (f % constant_like(f, 2.0)).ne(constant_like(f, 0.0));
  const GraphTensor up = bool_or(d.gt(0.5), bool_and(d.eq(constant_like(d, 0.5)), odd));
  return f + up.cast(x.dtype);
}

}  // namespace

void lower_neg(AtenNode& n) { n.set_output(-input(n)); }

void lower_abs(AtenNode& n) { n.set_output(input(n).abs()); }

void lower_exp(AtenNode& n) {
  float_unary(n, [](const GraphTensor& x) { return x.exp(); });
}

void lower_log(AtenNode& n) {
  float_unary(n, [](const GraphTensor& x) { return x.log(); });
}

void lower_sqrt(AtenNode& n) {
  float_unary(n, [](const GraphTensor& x) { return x.sqrt(); });
}

void lower_rsqrt(AtenNode& n) {
  float_unary(n, [](const GraphTensor& x) { return x.sqrt().recip(); });
}

void lower_reciprocal(AtenNode& n) {
  float_unary(n, [](const GraphTensor& x) { return x.recip(); });
}

void lower_sin(AtenNode& n) {
  float_unary(n, [](const GraphTensor& x) { return x.sin(); });
}

void lower_cos(AtenNode& n) {
  float_unary(n, [](const GraphTensor& x) { return x.cos(); });
}

void lower_square(AtenNode& n) {
  const GraphTensor x = input(n);
  n.set_output(x * x);
}

// pow.Tensor_Scalar(self, exponent): integral exponents by multiplication (negative: the
// reciprocal, floats only), 0.5 / -0.5 as sqrt / rsqrt (as torch), others exp2(e * log2(x)),
// which is NaN for negative bases exactly where torch's pow is.
void lower_pow_tensor_scalar(AtenNode& n) {
  const GraphTensor x = input(n);
  const double e = n.scalar("exponent").value;
  if (!std::isfinite(e)) n.fail(fmt::format("exponent {} is not supported (finite only)", e));
  if (e == std::floor(e) && std::fabs(e) <= 9.007199254740992e15) {
    const auto k = static_cast<int64_t>(e);
    if (k < 0 && !is_float(x.dtype))
      n.fail(
          fmt::format("{} to the negative power {}: integers to negative integer powers are "
                      "not allowed (as in torch)",
                      dtype_name(x.dtype), k));
    const GraphTensor r = pow_int(x, static_cast<uint64_t>(k < 0 ? -k : k));
    return n.set_output(k < 0 ? r.recip() : r);
  }
  if (!is_float(x.dtype)) n.fail("a non-integral power needs a float result");
  if (e == 0.5) return n.set_output(opmath(x, [](const GraphTensor& t) { return t.sqrt(); }));
  if (e == -0.5)
    return n.set_output(opmath(x, [](const GraphTensor& t) { return t.sqrt().recip(); }));
  // log2(-inf) is NaN, but (-inf) ** e is inf ** e for non-integral e.
  n.set_output(wide(x, [&](const GraphTensor& t) {
    const GraphTensor inf = constant_like(t, kInf);
    return where(t.eq(constant_like(t, -kInf)), inf, t).pow(e);
  }));
}

// pow.Tensor_Tensor(self, exponent) and pow.Scalar(self, exponent): float results only.
void lower_pow_tensor_tensor(AtenNode& n) {
  const DType dt = n.out_dtype();
  if (!is_float(dt))
    n.fail(fmt::format("{} ** {} tensor powers are not supported (only float results)",
                       dtype_name(dt), dtype_name(dt)));
  const Operand b = operand(n, "self"), e = operand(n, "exponent");
  const GraphTensor base = as_tensor(b, dt, n.graph()), ex = as_tensor(e, dt, n.graph());
  if (dt == DType::F64) return n.set_output(pow_float(base, ex));
  const DType w = dt == DType::F32 ? DType::F64 : DType::F32;
  n.set_output(pow_float(base.cast(w), ex.cast(w)).cast(dt));
}

void lower_trunc(AtenNode& n) { rounding(n, trunc_finite); }

void lower_floor(AtenNode& n) { rounding(n, floor_finite); }

// ceil(x) = -floor(-x).
void lower_ceil(AtenNode& n) {
  rounding(n, [](const GraphTensor& x) { return -floor_finite(-x); });
}

// round(x) and round.decimals(x, decimals): half to even; with decimals, torch's
// round(x * 10^d) / 10^d (d < 0: round(x / 10^-d) * 10^-d), the division as a product with the
// reciprocal (within an ulp of torch).
void lower_round(AtenNode& n) {
  const int64_t d = n.int_("decimals", 0);
  if (d == 0) return rounding(n, round_even);
  if (d > 300 || d < -300) n.fail(fmt::format("decimals={} is out of range", d));
  const double p = std::pow(10.0, static_cast<double>(d < 0 ? -d : d));
  rounding(n, [&](const GraphTensor& x) {
    if (d > 0) return round_even(x * p) * (1.0 / p);
    return round_even(x * (1.0 / p)) * p;
  });
}

}  // namespace luminal::aten
