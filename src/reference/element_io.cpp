// Typed element loads/stores and view reads shared by the reference kernels.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "reference/kernels.h"

namespace luminal::reference {

namespace {

template <class T>
T read_as(const std::byte* base, int64_t i) {
  T v;
  std::memcpy(&v, base + i * static_cast<int64_t>(sizeof(T)), sizeof(T));
  return v;
}

template <class T>
void write_as(std::byte* base, int64_t i, T v) {
  std::memcpy(base + i * static_cast<int64_t>(sizeof(T)), &v, sizeof(T));
}

// Truncates toward zero like a C cast, but without UB: NaN -> 0, out-of-range saturates.
int64_t trunc_to_i64(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9223372036854775807.0) return std::numeric_limits<int64_t>::max();
  if (v <= -9223372036854775808.0) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

}  // namespace

double load_f64(const std::byte* base, DType dt, int64_t i) {
  switch (dt) {
    case DType::F32:
      return read_as<float>(base, i);
    case DType::F64:
      return read_as<double>(base, i);
    case DType::F16:
      return f16_bits_to_f32(read_as<uint16_t>(base, i));
    case DType::BF16:
      return bf16_bits_to_f32(read_as<uint16_t>(base, i));
    case DType::I32:
      return read_as<int32_t>(base, i);
    case DType::I64:
      return static_cast<double>(read_as<int64_t>(base, i));
    case DType::I8:
      return read_as<int8_t>(base, i);
    case DType::U8:
      return read_as<uint8_t>(base, i);
    case DType::Bool:
      return read_as<uint8_t>(base, i) != 0 ? 1.0 : 0.0;
  }
  throw std::logic_error("[cpu] unknown dtype");
}

int64_t load_i64(const std::byte* base, DType dt, int64_t i) {
  switch (dt) {
    case DType::I32:
      return read_as<int32_t>(base, i);
    case DType::I64:
      return read_as<int64_t>(base, i);
    case DType::I8:
      return read_as<int8_t>(base, i);
    case DType::U8:
      return read_as<uint8_t>(base, i);
    case DType::Bool:
      return read_as<uint8_t>(base, i) != 0 ? 1 : 0;
    default:
      return trunc_to_i64(load_f64(base, dt, i));
  }
}

void store_f64(std::byte* base, DType dt, int64_t i, double v) {
  switch (dt) {
    case DType::F32:
      return write_as<float>(base, i, static_cast<float>(v));
    case DType::F64:
      return write_as<double>(base, i, v);
    case DType::F16:
      return write_as<uint16_t>(base, i, f32_to_f16_bits(static_cast<float>(v)));
    case DType::BF16:
      return write_as<uint16_t>(base, i, f32_to_bf16_bits(static_cast<float>(v)));
    case DType::Bool:
      return write_as<uint8_t>(base, i, v != 0.0 ? 1 : 0);  // NaN counts as true
    default:
      return store_i64(base, dt, i, trunc_to_i64(v));
  }
}

void store_i64(std::byte* base, DType dt, int64_t i, int64_t v) {
  // Integer narrowing is modular (C++20), matching a C cast.
  switch (dt) {
    case DType::F32:
      return write_as<float>(base, i, static_cast<float>(v));
    case DType::F64:
      return write_as<double>(base, i, static_cast<double>(v));
    case DType::F16:
      return write_as<uint16_t>(base, i, f32_to_f16_bits(static_cast<float>(v)));
    case DType::BF16:
      return write_as<uint16_t>(base, i, f32_to_bf16_bits(static_cast<float>(v)));
    case DType::I32:
      return write_as<int32_t>(base, i, static_cast<int32_t>(v));
    case DType::I64:
      return write_as<int64_t>(base, i, v);
    case DType::I8:
      return write_as<int8_t>(base, i, static_cast<int8_t>(v));
    case DType::U8:
      return write_as<uint8_t>(base, i, static_cast<uint8_t>(v));
    case DType::Bool:
      return write_as<uint8_t>(base, i, v != 0 ? 1 : 0);
  }
  throw std::logic_error("[cpu] unknown dtype");
}

std::optional<int64_t> Operand::offset(std::span<const int64_t> idx) const {
  std::optional<int64_t> off = view.source_offset(idx);
  if (off && (*off < 0 || *off >= src->numel())) {
    throw std::runtime_error(
        fmt::format("[cpu] view reads element {} of node {}, which has {} elements", *off, producer,
                    src->numel()));
  }
  return off;
}

double Operand::load_f(std::span<const int64_t> idx) const {
  std::optional<int64_t> off = offset(idx);
  return off ? load_f64(src->bytes.data(), src->dtype, *off) : 0.0;
}

int64_t Operand::load_i(std::span<const int64_t> idx) const {
  std::optional<int64_t> off = offset(idx);
  return off ? load_i64(src->bytes.data(), src->dtype, *off) : 0;
}

void Operand::copy_element(std::span<const int64_t> idx, std::byte* dst) const {
  const size_t size = dtype_size(src->dtype);
  std::optional<int64_t> off = offset(idx);
  if (off) {
    std::memcpy(dst, src->bytes.data() + *off * static_cast<int64_t>(size), size);
  } else {
    std::memset(dst, 0, size);  // all-zero bytes are 0 in every dtype
  }
}

bool next_index(std::vector<int64_t>& idx, std::span<const int64_t> dims) {
  for (size_t d = idx.size(); d-- > 0;) {
    if (++idx[d] < dims[d]) return true;
    idx[d] = 0;
  }
  return false;
}

int64_t numel_of(std::span<const int64_t> dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::string dims_string(std::span<const int64_t> dims) {
  return fmt::format("[{}]", fmt::join(dims, ", "));
}

std::string KernelContext::where() const {
  return fmt::format("node {} ({})", id, op_name(node.kind));
}

void KernelContext::expect_dims(size_t i, std::span<const int64_t> dims) const {
  if (i >= in.size()) {
    throw std::runtime_error(fmt::format("[cpu] {}: missing input {}", where(), i));
  }
  const std::vector<int64_t>& got = in[i].view.dims;
  if (!std::equal(got.begin(), got.end(), dims.begin(), dims.end())) {
    throw std::runtime_error(fmt::format("[cpu] {}: input {} has dims {}, expected {}", where(), i,
                                         dims_string(got), dims_string(dims)));
  }
}

}  // namespace luminal::reference
