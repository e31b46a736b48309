// Host versions of the helpers generated kernels call (src/cuda/kernels/common.cuh), so the code
// generator's Flavor::Host output compiles with the system C++ compiler. The CPU backend pastes
// this file at the top of each translation unit it builds (no include path needed). Semantics
// match common.cuh: 16-bit floats live in buffers as raw words and in registers as float;
// float -> int conversions saturate and send NaN to 0; integer arithmetic wraps.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

// glibc's vector math (libmvec): with these declarations and -fopenmp-simd, a loop the entry
// points mark `omp simd` calls 8 / 16 exp2f at once instead of one (a bf16 SiLU * up over
// [128, 8192]: 13.7 -> 2.0 ns per element on one AVX-512 core). Within 4 ulp of the scalar
// functions. exp2 / log2 variants are in glibc from 2.35, sin from 2.22.
#if defined(__GLIBC__) && defined(__x86_64__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 35)
#pragma omp declare simd notinbranch
extern "C" float exp2f(float) noexcept;
#pragma omp declare simd notinbranch
extern "C" float log2f(float) noexcept;
#pragma omp declare simd notinbranch
extern "C" double exp2(double) noexcept;
#pragma omp declare simd notinbranch
extern "C" double log2(double) noexcept;
#endif
#if defined(__GLIBC__) && defined(__x86_64__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 22)
#pragma omp declare simd notinbranch
extern "C" float sinf(float) noexcept;
#pragma omp declare simd notinbranch
extern "C" double sin(double) noexcept;
#endif

#define __device__
#define __forceinline__ inline __attribute__((always_inline))

static inline float __int_as_float(int i) {
  float f;
  std::memcpy(&f, &i, 4);
  return f;
}

static inline double __longlong_as_double(long long i) {
  double d;
  std::memcpy(&d, &i, 8);
  return d;
}

static inline unsigned lum_float_bits(float f) {
  unsigned u;
  std::memcpy(&u, &f, 4);
  return u;
}

/// bfloat16 bits -> float (exact).
static inline float lum_bf16_to_f32(unsigned short h) { return __int_as_float(int(unsigned(h) << 16)); }

/// float -> bfloat16 bits, round to nearest even; NaN stays a (quiet) NaN.
static inline unsigned short lum_f32_to_bf16(float f) {
  const unsigned u = lum_float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)((u >> 16) | 0x40u);
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/// IEEE half bits -> float (the compiler's _Float16, F16C where the CPU has it).
static inline float lum_f16_to_f32(unsigned short h) {
  _Float16 x;
  std::memcpy(&x, &h, 2);
  return (float)x;
}

/// float -> IEEE half bits, round to nearest even.
static inline unsigned short lum_f32_to_f16(float f) {
  const _Float16 x = (_Float16)f;
  unsigned short h;
  std::memcpy(&h, &x, 2);
  return h;
}

static inline float lum_round_f16(float f) { return lum_f16_to_f32(lum_f32_to_f16(f)); }
static inline float lum_round_bf16(float f) { return lum_bf16_to_f32(lum_f32_to_bf16(f)); }

/// Truncation toward zero with saturation and NaN -> 0 (PTX cvt.rzi semantics; a C cast is UB).
static inline long long lum_f2ll(double f) {
  if (f != f) return 0;
  if (f >= 9223372036854775807.0) return INT64_MAX;
  if (f <= -9223372036854775808.0) return INT64_MIN;
  return (long long)f;
}
static inline long long lum_f2ll(float f) { return lum_f2ll((double)f); }

static inline long long lum_add_ll(long long a, long long b) {
  return (long long)((unsigned long long)a + (unsigned long long)b);
}
static inline long long lum_mul_ll(long long a, long long b) {
  return (long long)((unsigned long long)a * (unsigned long long)b);
}
/// C remainder; 0 for b == 0 and b == -1 (as the CUDA helper).
static inline long long lum_mod_ll(long long a, long long b) { return (b == 0 || b == -1) ? 0 : a % b; }

/// max that propagates NaN from either side, like torch.max.
static inline float lum_max_nan(float a, float b) { return (a != a) ? a : ((b != b || b > a) ? b : a); }
static inline double lum_max_nan(double a, double b) { return (a != a) ? a : ((b != b || b > a) ? b : a); }
static inline long long lum_max_nan(long long a, long long b) { return b > a ? b : a; }

// Online softmax (reduce.cuh): a running (max m, sum s of exp2((x - m) * c)) pair.
static inline float lum_exp2(float x) { return std::exp2(x); }
static inline double lum_exp2(double x) { return std::exp2(x); }

/// Factor that moves a sum taken relative to max `from` to max `to` (1 when equal, even at -inf).
template <class T>
static inline T lum_rescale(T from, T to, T c) {
  return from == to ? T(1) : lum_exp2((from - to) * c);
}

/// Adds element x to the running pair (m, s), as reduce.cuh does.
template <class T>
static inline void lum_online_add(T& m, T& s, T x, T c) {
  const T mn = lum_max_nan(m, x);
  s = s * lum_rescale(m, mn, c) + lum_rescale(x, mn, c);
  m = mn;
}

/// The final sum: NaN when every element was -inf (two-pass: exp2((-inf - -inf) * c)).
template <class T>
static inline T lum_online_sum(T m, T s) {
  return (std::isinf(m) && m < T(0)) ? s * (m - m) : s;
}

#define LUM_ERR_GATHER 1
#define LUM_ERR_SCATTER 2

/// Clamps a row index to [0, n - 1]; an index out of range also sets `code` in *err.
static inline long long lum_clamp_row(long long r, long long n, int* err, int code) {
  if (r >= 0 && r < n) return r;
  __atomic_fetch_or(err, code, __ATOMIC_RELAXED);
  return (r < 0 || n <= 0) ? 0 : n - 1;
}
