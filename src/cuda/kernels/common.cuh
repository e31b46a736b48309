// Device helpers shared by every generated kernel: 16-bit float storage conversions, reference-exact
// integer conversions and arithmetic, NaN-propagating max, and the bad-index error flag.
// Self-contained (no CUDA headers): NVRTC compiles it without an include path.
#pragma once

// f16 / bf16 live in buffers as raw 16-bit words and in registers as float.

/// IEEE half bits -> float.
__device__ __forceinline__ float lum_f16_to_f32(unsigned short h) {
  float f;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h));
  return f;
}

/// float -> IEEE half bits, round to nearest even.
__device__ __forceinline__ unsigned short lum_f32_to_f16(float f) {
  unsigned short h;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

/// bfloat16 bits -> float (exact: bf16 is the top half of a float).
__device__ __forceinline__ float lum_bf16_to_f32(unsigned short h) {
  return __int_as_float(static_cast<int>(static_cast<unsigned>(h) << 16));
}

/// float -> bfloat16 bits, round to nearest even (NaN stays NaN).
__device__ __forceinline__ unsigned short lum_f32_to_bf16(float f) {
  unsigned short h;
  asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(h) : "f"(f));
  return h;
}

/// f rounded to the nearest half value (what storing and reloading an f16 gives).
__device__ __forceinline__ float lum_round_f16(float f) { return lum_f16_to_f32(lum_f32_to_f16(f)); }

/// f rounded to the nearest bfloat16 value.
__device__ __forceinline__ float lum_round_bf16(float f) { return lum_bf16_to_f32(lum_f32_to_bf16(f)); }

/// Truncation toward zero with saturation and NaN -> 0 (PTX cvt semantics; a C cast would be UB).
__device__ __forceinline__ long long lum_f2ll(float f) {
  long long r;
  asm("cvt.rzi.s64.f32 %0, %1;" : "=l"(r) : "f"(f));
  return r;
}

/// Double version of lum_f2ll.
__device__ __forceinline__ long long lum_f2ll(double f) {
  long long r;
  asm("cvt.rzi.s64.f64 %0, %1;" : "=l"(r) : "d"(f));
  return r;
}

/// Wrapping int64 addition (two's complement, no UB).
__device__ __forceinline__ long long lum_add_ll(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) + static_cast<unsigned long long>(b));
}

/// Wrapping int64 multiplication.
__device__ __forceinline__ long long lum_mul_ll(long long a, long long b) {
  return static_cast<long long>(static_cast<unsigned long long>(a) * static_cast<unsigned long long>(b));
}

/// C remainder (sign of the dividend); 0 for b == 0 (the reference throws) and b == -1 (no trap).
__device__ __forceinline__ long long lum_mod_ll(long long a, long long b) {
  return (b == 0 || b == -1) ? 0 : a % b;
}

/// max that propagates NaN from either side, like torch.max.
__device__ __forceinline__ float lum_max_nan(float a, float b) {
  return (a != a) ? a : ((b != b || b > a) ? b : a);
}

/// Double version of lum_max_nan.
__device__ __forceinline__ double lum_max_nan(double a, double b) {
  return (a != a) ? a : ((b != b || b > a) ? b : a);
}

/// Integer max.
__device__ __forceinline__ long long lum_max_nan(long long a, long long b) { return b > a ? b : a; }

/// Error bits set in the kernel's `int* err` word (the runtime raises them at the next read).
#define LUM_ERR_GATHER 1
#define LUM_ERR_SCATTER 2

/// Clamps a row index to [0, n - 1]; an index out of range also sets `code` in *err.
__device__ __forceinline__ long long lum_clamp_row(long long r, long long n, int* err, int code) {
  if (r >= 0 && r < n) return r;
  atomicOr(err, code);
  return (r < 0 || n <= 0) ? 0 : n - 1;
}
