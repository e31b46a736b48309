// Harness value helpers: dtype conversion of inputs and results, seeded random data, fixtures.
#include <cstring>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "luminal/safetensors.h"
#include "ops/harness.h"

#ifndef LUMINAL_FIXTURES
#error "LUMINAL_FIXTURES (absolute path of tests/fixtures) must be defined for test targets"
#endif

namespace luminal::ops_test {
namespace {

template <class T>
std::vector<T> convert(const std::vector<double>& v) {
  std::vector<T> out;
  out.reserve(v.size());
  for (double x : v) out.push_back(static_cast<T>(x));
  return out;
}

template <class H>
std::vector<H> convert_half(const std::vector<double>& v) {
  std::vector<H> out;
  out.reserve(v.size());
  for (double x : v) out.push_back(H(static_cast<float>(x)));
  return out;
}

template <class T>
std::vector<double> widen(std::span<const std::byte> bytes) {
  std::vector<double> out(bytes.size() / sizeof(T));
  for (size_t i = 0; i < out.size(); ++i) {
    T x;
    std::memcpy(&x, bytes.data() + i * sizeof(T), sizeof(T));
    out[i] = static_cast<double>(x);
  }
  return out;
}

std::vector<double> widen_half(std::span<const std::byte> bytes, float (*to_f32)(uint16_t)) {
  std::vector<double> out(bytes.size() / 2);
  for (size_t i = 0; i < out.size(); ++i) {
    uint16_t bits;
    std::memcpy(&bits, bytes.data() + i * 2, 2);
    out[i] = to_f32(bits);
  }
  return out;
}

/// Raw bytes of dtype dt -> doubles.
std::vector<double> bytes_to_doubles(std::span<const std::byte> b, DType dt) {
  switch (dt) {
    case DType::F32:
      return widen<float>(b);
    case DType::F64:
      return widen<double>(b);
    case DType::F16:
      return widen_half(b, f16_bits_to_f32);
    case DType::BF16:
      return widen_half(b, bf16_bits_to_f32);
    case DType::I32:
      return widen<int32_t>(b);
    case DType::I64:
      return widen<int64_t>(b);
    case DType::I8:
      return widen<int8_t>(b);
    case DType::U8:
      return widen<uint8_t>(b);
    case DType::Bool:
      return widen<uint8_t>(b);
  }
  throw std::invalid_argument("[harness] unknown dtype");
}

}  // namespace

std::vector<double> quantize(std::vector<double> values, DType dt) {
  for (double& x : values) {
    switch (dt) {
      case DType::F32:
        x = static_cast<float>(x);
        break;
      case DType::F64:
        break;
      case DType::F16:
        x = static_cast<float>(f16(static_cast<float>(x)));
        break;
      case DType::BF16:
        x = static_cast<float>(bf16(static_cast<float>(x)));
        break;
      case DType::I32:
        x = static_cast<int32_t>(x);
        break;
      case DType::I64:
        x = static_cast<double>(static_cast<int64_t>(x));
        break;
      case DType::I8:
        x = static_cast<int8_t>(x);
        break;
      case DType::U8:
        x = static_cast<uint8_t>(x);
        break;
      case DType::Bool:
        x = x != 0 ? 1 : 0;
        break;
    }
  }
  return values;
}

void set_input(Runtime& rt, const GraphTensor& t, const std::vector<double>& v) {
  switch (t.dtype) {
    case DType::F32:
      rt.set_data(t, std::span<const float>(convert<float>(v)));
      return;
    case DType::F64:
      rt.set_data(t, std::span<const double>(v));
      return;
    case DType::F16:
      rt.set_data(t, std::span<const f16>(convert_half<f16>(v)));
      return;
    case DType::BF16:
      rt.set_data(t, std::span<const bf16>(convert_half<bf16>(v)));
      return;
    case DType::I32:
      rt.set_data(t, std::span<const int32_t>(convert<int32_t>(v)));
      return;
    case DType::I64:
      rt.set_data(t, std::span<const int64_t>(convert<int64_t>(v)));
      return;
    case DType::I8:
      rt.set_data(t, std::span<const int8_t>(convert<int8_t>(v)));
      return;
    case DType::U8:
      rt.set_data(t, std::span<const uint8_t>(convert<uint8_t>(v)));
      return;
    case DType::Bool: {
      // No typed Bool overload: pass the 0/1 bytes through set_bytes.
      std::vector<uint8_t> b = convert<uint8_t>(quantize(v, DType::Bool));
      rt.set_bytes(t, std::as_bytes(std::span<const uint8_t>(b)));
      return;
    }
  }
}

std::vector<double> read_output(Runtime& rt, const GraphTensor& t) {
  switch (t.dtype) {
    case DType::F32:
    case DType::F16:
    case DType::BF16: {
      std::vector<float> f = rt.get_f32(t);
      return {f.begin(), f.end()};
    }
    case DType::I32: {
      std::vector<int32_t> i = rt.get_i32(t);
      return {i.begin(), i.end()};
    }
    case DType::I64: {
      std::vector<int64_t> i = rt.get_i64(t);
      return {i.begin(), i.end()};
    }
    default: {
      std::vector<std::byte> b = rt.get_bytes(t);
      return bytes_to_doubles(b, t.dtype);
    }
  }
}

std::vector<double> random_values(size_t n, double lo, double hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(lo, hi);
  std::vector<double> out(n);
  for (double& x : out) x = dist(rng);
  bool all_zero = true;
  for (double x : out) all_zero = all_zero && x == 0;
  if (all_zero && n > 0) out[0] = hi > 1 ? 1 : (lo + hi) / 2 + 0.25 * (hi - lo);
  return out;
}

std::vector<double> ramp(size_t n, double start, double step) {
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) out[i] = start + step * static_cast<double>(i);
  return out;
}

std::vector<Expr> Fixture::dims() const { return {shape.begin(), shape.end()}; }

Fixture fixture(const std::string& name) {
  // Opened once per process; the mapping lives until exit.
  static const SafetensorsFile file =
      SafetensorsFile::open(std::string(LUMINAL_FIXTURES) + "/ops.safetensors");
  const SafeTensor* t = file.find(name);
  if (t == nullptr) {
    throw std::invalid_argument(
        fmt::format("[harness] fixture '{}' not in {} (re-run tests/fixtures/make_fixtures.py)",
                    name, file.path()));
  }
  return Fixture{t->dtype, t->shape, bytes_to_doubles(t->data, t->dtype)};
}

GraphTensor fixture_input(Graph& g, CaseIO& io, const std::string& name, std::optional<DType> dt) {
  Fixture f = fixture(name);
  return io.in(g.named_tensor(name, f.dims(), dt.value_or(f.dtype)), std::move(f.values));
}

}  // namespace luminal::ops_test
