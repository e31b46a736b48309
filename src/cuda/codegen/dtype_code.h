// Per-dtype CUDA code fragments: value and storage types, loads, stores, literals, conversions and
// the elementwise primitives. Semantics follow the reference runtime (src/reference): every op
// result is rounded/wrapped to its dtype, so fused kernels match op-by-op execution.
#pragma once

#include <string>
#include <string_view>

#include "luminal/dtype.h"
#include "luminal/graph.h"

namespace luminal::cuda::codegen {

/// C type of a dt value in registers: float for f16/bf16/f32, bool for Bool, the natural type else.
std::string_view value_type(DType dt);
/// C type of a dt element in a device buffer: unsigned short for f16/bf16, unsigned char for Bool.
std::string_view storage_type(DType dt);
/// Code reading element `idx` of buffer `ptr` as a value_type(dt).
std::string load_code(DType dt, std::string_view ptr, std::string_view idx);
/// Code turning value `v` into storage_type(dt).
std::string store_code(DType dt, std::string_view v);
/// A literal of value_type(dt) for v, converted as a store of v into dt would (floats round,
/// integers truncate and wrap, Bool is v != 0).
std::string literal(DType dt, double v);
/// The zero of value_type(dt).
std::string zero(DType dt);
/// Code converting value `v` of dtype `from` to dtype `to` with Cast semantics: float -> int
/// truncates (saturating, NaN -> 0) then wraps; int -> int wraps; anything -> Bool is v != 0.
std::string convert(DType from, DType to, std::string_view v);
/// Code of Exp2 / Log2 / Sin / Sqrt / Recip on a value of dt (integers compute in double).
std::string unary_code(OpKind op, DType dt, std::string_view a);
/// Code of Add / Mul / Mod / LessThan on values of dt (integers wrap; LessThan yields bool).
std::string binary_code(OpKind op, DType dt, std::string_view a, std::string_view b);

/// The accumulator dtype of a reduction over dt: F32 for 16/32-bit floats, F64, or I64.
DType accumulator_dtype(DType dt);
/// Lowercase snake name of an op ("sum_reduce") for kernel names.
std::string snake_name(OpKind op);

}  // namespace luminal::cuda::codegen
