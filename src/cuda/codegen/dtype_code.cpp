// Per-dtype CUDA code fragments (see dtype_code.h). The helpers named lum_* live in common.cuh.
#include "cuda/codegen/dtype_code.h"

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

namespace luminal::cuda::codegen {

namespace {

static_assert(kDTypeCount == 9, "dtype added: update the tables in dtype_code.cpp");

bool is_half(DType dt) { return dt == DType::F16 || dt == DType::BF16; }

// v rounded to dt's precision, still a float (for f16 / bf16 results held in registers).
std::string round_to(DType dt, const std::string& v) {
  if (dt == DType::F16) return fmt::format("lum_round_f16({})", v);
  if (dt == DType::BF16) return fmt::format("lum_round_bf16({})", v);
  return v;
}

std::string float_literal(double v, bool dbl) {
  if (std::isnan(v)) return dbl ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fc00000)";
  if (std::isinf(v)) {
    std::string inf = dbl ? "__longlong_as_double(0x7ff0000000000000LL)" : "__int_as_float(0x7f800000)";
    return v < 0 ? "(-" + inf + ")" : inf;
  }
  std::string s = dbl ? fmt::format("{:.17g}", v) : fmt::format("{:.9g}", static_cast<float>(v));
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  if (!dbl) s += "f";
  return std::signbit(v) ? "(" + s + ")" : s;
}

// The reference's double -> int64 truncation: NaN -> 0, saturating.
int64_t trunc_to_i64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

std::string int_literal(DType dt, int64_t v) {
  switch (dt) {
    case DType::I64:
      if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1LL)";
      return v < 0 ? fmt::format("({}LL)", v) : fmt::format("{}LL", v);
    case DType::I32: {
      const auto w = static_cast<int32_t>(v);
      if (w == std::numeric_limits<int32_t>::min()) return "(-2147483647 - 1)";
      return w < 0 ? fmt::format("({})", w) : fmt::format("{}", w);
    }
    case DType::I8: return fmt::format("((signed char){})", static_cast<int8_t>(v));
    case DType::U8: return fmt::format("((unsigned char){})", static_cast<uint8_t>(v));
    case DType::Bool: return v != 0 ? "true" : "false";
    default: throw std::logic_error("[codegen] int_literal of a float dtype");
  }
}

// Math function name for float (f32 and 16-bit) or double.
std::string_view unary_fn(OpKind op, bool dbl) {
  switch (op) {
    case OpKind::Exp2: return dbl ? "exp2" : "exp2f";
    case OpKind::Log2: return dbl ? "log2" : "log2f";
    case OpKind::Sin: return dbl ? "sin" : "sinf";
    case OpKind::Sqrt: return dbl ? "sqrt" : "sqrtf";
    default: return "";
  }
}

std::string float_unary(OpKind op, bool dbl, std::string_view a) {
  if (op == OpKind::Recip) return fmt::format("({} / {})", dbl ? "1.0" : "1.0f", a);
  std::string_view fn = unary_fn(op, dbl);
  if (fn.empty()) throw std::logic_error(fmt::format("[codegen] {} is not unary", op_name(op)));
  return fmt::format("{}({})", fn, a);
}

}  // namespace

std::string_view value_type(DType dt) {
  switch (dt) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: return "float";
    case DType::F64: return "double";
    case DType::I32: return "int";
    case DType::I64: return "long long";
    case DType::I8: return "signed char";
    case DType::U8: return "unsigned char";
    case DType::Bool: return "bool";
  }
  throw std::logic_error("[codegen] unknown dtype");
}

std::string_view storage_type(DType dt) {
  if (is_half(dt)) return "unsigned short";
  if (dt == DType::Bool) return "unsigned char";
  return value_type(dt);
}

std::string load_code(DType dt, std::string_view ptr, std::string_view idx) {
  switch (dt) {
    case DType::F16: return fmt::format("lum_f16_to_f32({}[{}])", ptr, idx);
    case DType::BF16: return fmt::format("lum_bf16_to_f32({}[{}])", ptr, idx);
    case DType::Bool: return fmt::format("({}[{}] != 0)", ptr, idx);
    default: return fmt::format("{}[{}]", ptr, idx);
  }
}

std::string store_code(DType dt, std::string_view v) {
  switch (dt) {
    case DType::F16: return fmt::format("lum_f32_to_f16({})", v);
    case DType::BF16: return fmt::format("lum_f32_to_bf16({})", v);
    case DType::Bool: return fmt::format("(unsigned char)({})", v);
    default: return std::string(v);
  }
}

std::string literal(DType dt, double v) {
  switch (dt) {
    case DType::F32: return float_literal(static_cast<float>(v), false);
    case DType::F64: return float_literal(v, true);
    case DType::F16: return float_literal(f16_bits_to_f32(f32_to_f16_bits(static_cast<float>(v))), false);
    case DType::BF16: return float_literal(bf16_bits_to_f32(f32_to_bf16_bits(static_cast<float>(v))), false);
    case DType::Bool: return v != 0.0 ? "true" : "false";  // NaN counts as true, like the reference
    default: return int_literal(dt, trunc_to_i64(v));
  }
}

std::string zero(DType dt) { return literal(dt, 0.0); }

std::string convert(DType from, DType to, std::string_view v) {
  const std::string p = fmt::format("({})", v);
  if (from == to) return std::string(v);
  if (to == DType::Bool) return is_float(from) ? fmt::format("({} != 0.0f)", p) : fmt::format("({} != 0)", p);
  if (from == DType::Bool) return convert(DType::I32, to, fmt::format("(int){}", p));
  if (is_float(from) && is_float(to)) {
    if (to == DType::F64) return fmt::format("(double){}", p);
    if (to == DType::F32) return fmt::format("(float){}", p);
    return round_to(to, fmt::format("(float){}", p));
  }
  if (is_float(from)) {  // float -> integer: saturating truncation to int64, then wrap
    const std::string t = fmt::format("lum_f2ll({})", v);
    return to == DType::I64 ? t : fmt::format("({}){}", value_type(to), t);
  }
  if (is_float(to)) {  // integer -> float (16-bit via float, as PyTorch)
    if (to == DType::F64) return fmt::format("(double){}", p);
    return round_to(to, fmt::format("(float){}", p));
  }
  return fmt::format("({}){}", value_type(to), p);  // integer -> integer wraps
}

std::string unary_code(OpKind op, DType dt, std::string_view a) {
  if (dt == DType::F64) return float_unary(op, true, a);
  if (is_float(dt)) return round_to(dt, float_unary(op, false, a));
  // Integers (and Bool) compute in double like the reference, then truncate back.
  return convert(DType::F64, dt, float_unary(op, true, convert(dt, DType::F64, a)));
}

std::string binary_code(OpKind op, DType dt, std::string_view a, std::string_view b) {
  if (op == OpKind::LessThan) return fmt::format("({} < {})", a, b);
  if (is_float(dt)) {
    const bool dbl = dt == DType::F64;
    std::string r;
    switch (op) {
      case OpKind::Add: r = fmt::format("({} + {})", a, b); break;
      case OpKind::Mul: r = fmt::format("({} * {})", a, b); break;
      case OpKind::Mod: r = fmt::format("{}({}, {})", dbl ? "fmod" : "fmodf", a, b); break;
      default: throw std::logic_error(fmt::format("[codegen] {} is not binary", op_name(op)));
    }
    return round_to(dt, r);
  }
  if (dt == DType::Bool) {  // reference: int64 result stored as != 0
    if (op == OpKind::Add) return fmt::format("({} || {})", a, b);
    if (op == OpKind::Mul) return fmt::format("({} && {})", a, b);
    return "false";  // Mod by a Bool: divisor 0 or 1, remainder 0
  }
  const std::string la = fmt::format("(long long)({})", a), lb = fmt::format("(long long)({})", b);
  std::string r;
  switch (op) {
    case OpKind::Add: r = fmt::format("lum_add_ll({}, {})", la, lb); break;
    case OpKind::Mul: r = fmt::format("lum_mul_ll({}, {})", la, lb); break;
    case OpKind::Mod: r = fmt::format("lum_mod_ll({}, {})", la, lb); break;
    default: throw std::logic_error(fmt::format("[codegen] {} is not binary", op_name(op)));
  }
  return dt == DType::I64 ? r : fmt::format("({}){}", value_type(dt), r);
}

DType accumulator_dtype(DType dt) {
  if (dt == DType::F64) return DType::F64;
  if (is_float(dt)) return DType::F32;
  return DType::I64;
}

std::string snake_name(OpKind op) {
  std::string out;
  for (char c : op_name(op)) {
    if (c >= 'A' && c <= 'Z') {
      if (!out.empty()) out += '_';
      out += static_cast<char>(c - 'A' + 'a');
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace luminal::cuda::codegen
