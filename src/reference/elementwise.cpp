// Reference kernels for elementwise ops, constants and copies. Floats compute in double,
// integers (and Bool, as 0/1) in int64; results convert to the output dtype on store.
#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "reference/kernels.h"

namespace luminal::reference {

namespace {

double unary_f(OpKind k, double x) {
  switch (k) {
    case OpKind::Exp2:
      return std::exp2(x);
    case OpKind::Log2:
      return std::log2(x);
    case OpKind::Sin:
      return std::sin(x);
    case OpKind::Sqrt:
      return std::sqrt(x);
    case OpKind::Recip:
      return 1.0 / x;
    default:
      throw std::logic_error("[cpu] not a unary op");
  }
}

double binary_f(OpKind k, double a, double b) {
  switch (k) {
    case OpKind::Add:
      return a + b;
    case OpKind::Mul:
      return a * b;
    case OpKind::Mod:
      return std::fmod(a, b);  // torch.fmod: sign of the dividend
    case OpKind::LessThan:
      return a < b ? 1.0 : 0.0;
    default:
      throw std::logic_error("[cpu] not a binary op");
  }
}

int64_t binary_i(OpKind k, int64_t a, int64_t b) {
  // Wrapping arithmetic through uint64 (signed overflow would be UB).
  const auto ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (k) {
    case OpKind::Add:
      return static_cast<int64_t>(ua + ub);
    case OpKind::Mul:
      return static_cast<int64_t>(ua * ub);
    case OpKind::Mod:
      if (b == 0) throw std::runtime_error("[mod] integer modulo by zero");
      return b == -1 ? 0 : a % b;  // INT64_MIN % -1 would trap
    case OpKind::LessThan:
      return a < b ? 1 : 0;
    default:
      throw std::logic_error("[cpu] not a binary op");
  }
}

void run_unary(const KernelContext& k) {
  k.expect_dims(0, k.out.dims);
  const Operand& a = k.in[0];
  std::byte* out = k.out.bytes.data();
  // Integer inputs go through double too: these ops are float-valued by nature.
  for_each_index(k.out.dims, [&](std::span<const int64_t> idx, int64_t i) {
    store_f64(out, k.out.dtype, i, unary_f(k.node.kind, a.load_f(idx)));
  });
}

void run_binary(const KernelContext& k) {
  k.expect_dims(0, k.out.dims);
  k.expect_dims(1, k.out.dims);
  const Operand &a = k.in[0], &b = k.in[1];
  if (a.dtype() != b.dtype()) {
    throw std::runtime_error(fmt::format("[cpu] {}: dtype mismatch: {} vs {}", k.where(),
                                         dtype_name(a.dtype()), dtype_name(b.dtype())));
  }
  std::byte* out = k.out.bytes.data();
  const OpKind op = k.node.kind;
  if (is_float(a.dtype())) {
    for_each_index(k.out.dims, [&](std::span<const int64_t> idx, int64_t i) {
      store_f64(out, k.out.dtype, i, binary_f(op, a.load_f(idx), b.load_f(idx)));
    });
  } else {
    for_each_index(k.out.dims, [&](std::span<const int64_t> idx, int64_t i) {
      store_i64(out, k.out.dtype, i, binary_i(op, a.load_i(idx), b.load_i(idx)));
    });
  }
}

void run_cast(const KernelContext& k) {
  k.expect_dims(0, k.out.dims);
  const Operand& a = k.in[0];
  std::byte* out = k.out.bytes.data();
  const bool from_float = is_float(a.dtype());
  for_each_index(k.out.dims, [&](std::span<const int64_t> idx, int64_t i) {
    if (from_float) {
      store_f64(out, k.out.dtype, i, a.load_f(idx));
    } else {
      store_i64(out, k.out.dtype, i, a.load_i(idx));
    }
  });
}

// Output: a bit-exact copy of the input view.
void run_copy(const KernelContext& k) {
  k.expect_dims(0, k.out.dims);
  const Operand& a = k.in[0];
  if (a.dtype() != k.out.dtype) {
    throw std::runtime_error(fmt::format("[cpu] {}: input is {}, output is {}", k.where(),
                                         dtype_name(a.dtype()), dtype_name(k.out.dtype)));
  }
  const auto size = static_cast<int64_t>(dtype_size(k.out.dtype));
  std::byte* out = k.out.bytes.data();
  for_each_index(k.out.dims, [&](std::span<const int64_t> idx, int64_t i) {
    a.copy_element(idx, out + i * size);
  });
}

}  // namespace

void run_elementwise(const KernelContext& k) {
  std::byte* out = k.out.bytes.data();
  const int64_t n = numel_of(k.out.dims);
  switch (k.node.kind) {
    case OpKind::Constant:
      for (int64_t i = 0; i < n; ++i) store_f64(out, k.out.dtype, i, k.node.value);
      return;
    case OpKind::Iota:
      for (int64_t i = 0; i < n; ++i) store_i64(out, k.out.dtype, i, i);
      return;
    case OpKind::Output:
      return run_copy(k);
    case OpKind::Cast:
      return run_cast(k);
    case OpKind::Exp2:
    case OpKind::Log2:
    case OpKind::Sin:
    case OpKind::Sqrt:
    case OpKind::Recip:
      return run_unary(k);
    case OpKind::Add:
    case OpKind::Mul:
    case OpKind::Mod:
    case OpKind::LessThan:
      return run_binary(k);
    default:
      throw std::logic_error(fmt::format("[cpu] {} is not elementwise", k.where()));
  }
}

}  // namespace luminal::reference
