// Helpers the CPU backend's unit tests share.
#pragma once

#include <cstring>
#include <memory>
#include <random>
#include <vector>

#include "compiler/kernel_plan.h"
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

/// n values uniform in [-1, 1) from `seed`.
inline std::vector<float> randoms(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  std::vector<float> v(n);
  for (float& x : v) x = u(rng);
  return v;
}

/// The MatmulStep of relu(x W^T + bias) in dt: x [m, k] (buffer 0), nn.Linear's W [n, k] read as a
/// k x n view (buffer 1), y (buffer 2), bias (buffer 3).
inline compiler::MatmulStep linear_step(DType dt, int64_t m, int64_t n, int64_t k) {
  compiler::MatmulStep s;
  s.a = 0, s.b = 1, s.c = 2, s.bias = 3;
  s.dtype = dt;
  s.m = m, s.n = n, s.k = k;
  s.a_row = k, s.a_col = 1, s.a_batch = m * k;
  s.b_row = 1, s.b_col = k, s.b_batch = 0;
  s.relu = true;
  return s;
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
