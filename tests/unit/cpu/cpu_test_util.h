// Helpers the CPU backend's unit tests share.
#pragma once

#include <cstring>
#include <memory>
#include <vector>

#include "luminal/compile.h"
#include "luminal/cpu.h"

namespace luminal::cpu_test {

/// g compiled for the CPU backend with outputs poisoned before every run and no search (the
/// default plan: the rules' first available alternatives, host kernels included).
inline std::unique_ptr<Executable> cpu_plan(const Graph& g) {
  cpu::CpuOptions o;
  o.poison = true;
  CompileOptions co;
  co.search.enabled = false;
  return compile(g, cpu::backend(o), co);
}

/// v as raw bytes of dt (F32, or BF16 rounded to nearest even).
inline std::vector<std::byte> encode(DType dt, const std::vector<float>& v) {
  std::vector<std::byte> out(v.size() * dtype_size(dt));
  for (size_t i = 0; i < v.size(); ++i) {
    if (dt == DType::BF16) {
      const uint16_t h = f32_to_bf16_bits(v[i]);
      std::memcpy(out.data() + 2 * i, &h, 2);
    } else {
      std::memcpy(out.data() + 4 * i, &v[i], 4);
    }
  }
  return out;
}

/// Element i of encode()'s bytes as a float.
inline float decode(DType dt, const std::vector<std::byte>& b, size_t i) {
  if (dt == DType::BF16) {
    uint16_t h;
    std::memcpy(&h, b.data() + 2 * i, 2);
    return bf16_bits_to_f32(h);
  }
  float f;
  std::memcpy(&f, b.data() + 4 * i, 4);
  return f;
}

}  // namespace luminal::cpu_test
