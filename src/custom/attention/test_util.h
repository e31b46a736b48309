// Shared by CausalAttention's tests: a case (dims, dtype, positions), its graph, random inputs
// with fixed seeds, and a plain-loop oracle in double precision.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <random>

#include <fmt/format.h>
#include <span>
#include <vector>

#include "custom/attention/op.h"
#include "luminal/nn.h"
#include "luminal/runtime.h"

namespace luminal::attention_test {

/// One attention call: q [s, H, d], k / v [t, KV, d], q_pos [s].
struct Case {
  int64_t s = 1, t = 8, heads = 4, kv_heads = 2, dim = 64;
  DType dtype = DType::F32;
  std::vector<int32_t> pos;  // s positions in [0, t)
  unsigned seed = 1;
  double scale() const { return 1.0 / std::sqrt(double(dim)); }
};

/// The case's inputs and output in one graph.
struct Bound {
  GraphTensor q, k, v, pos, out;
};

/// Builds custom::CausalAttention (fused = true) or nn::causal_attention on fresh inputs.
inline Bound build(Graph& g, const Case& c, bool fused) {
  Bound b;
  b.q = g.named_tensor("q", {c.s, c.heads, c.dim}, c.dtype);
  b.k = g.named_tensor("k", {c.t, c.kv_heads, c.dim}, c.dtype);
  b.v = g.named_tensor("v", {c.t, c.kv_heads, c.dim}, c.dtype);
  b.pos = g.named_tensor("q_pos", {c.s}, DType::I32);
  b.out = fused ? custom_op(std::make_shared<custom::CausalAttention>(c.scale()),
                            {b.q, b.k, b.v, b.pos})
                : nn::causal_attention(b.q, b.k, b.v, b.pos, c.scale());
  b.out = b.out.output();
  return b;
}

/// Values in [-2, 2), rounded to bf16 for a BF16 case (so the oracle sees what the graph sees).
inline std::vector<float> values(size_t n, unsigned seed, DType dt) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  std::vector<float> v(n);
  for (float& x : v) {
    x = u(rng);
    if (dt == DType::BF16) x = float(bf16(x));
  }
  return v;
}

/// The case's q, k, v values.
struct Data {
  std::vector<float> q, k, v;
};
inline Data data_of(const Case& c) {
  return {values(size_t(c.s * c.heads * c.dim), c.seed, c.dtype),
          values(size_t(c.t * c.kv_heads * c.dim), c.seed + 1, c.dtype),
          values(size_t(c.t * c.kv_heads * c.dim), c.seed + 2, c.dtype)};
}

/// Sets b's inputs to the case's data.
inline void set_inputs(Runtime& rt, const Bound& b, const Case& c) {
  const Data x = data_of(c);
  auto put = [&](const GraphTensor& t, const std::vector<float>& v) {
    if (c.dtype == DType::F32) return rt.set_data(t, std::span<const float>(v));
    std::vector<bf16> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = bf16(v[i]);
    rt.set_data(t, std::span<const bf16>(h));
  };
  put(b.q, x.q);
  put(b.k, x.k);
  put(b.v, x.v);
  rt.set_data(b.pos, std::span<const int32_t>(c.pos));
}

/// The oracle: out [s, H, d] in double, keys j <= pos[i] only.
inline std::vector<double> loops(const Case& c) {
  const Data x = data_of(c);
  const int64_t g = c.heads / c.kv_heads, d = c.dim;
  std::vector<double> out(size_t(c.s * c.heads * d), 0.0);
  for (int64_t i = 0; i < c.s; ++i)
    for (int64_t h = 0; h < c.heads; ++h) {
      const int64_t kv = h / g, n = c.pos[size_t(i)] + 1;
      std::vector<double> w(static_cast<size_t>(n));
      double mx = -INFINITY, sum = 0;
      for (int64_t j = 0; j < n; ++j) {
        double dot = 0;
        for (int64_t e = 0; e < d; ++e)
          dot += double(x.q[size_t((i * c.heads + h) * d + e)]) *
                 x.k[size_t((j * c.kv_heads + kv) * d + e)];
        w[size_t(j)] = dot * c.scale();
        mx = std::max(mx, w[size_t(j)]);
      }
      for (double& v : w) sum += (v = std::exp(v - mx));
      for (int64_t j = 0; j < n; ++j)
        for (int64_t e = 0; e < d; ++e)
          out[size_t((i * c.heads + h) * d + e)] +=
              w[size_t(j)] / sum * x.v[size_t((j * c.kv_heads + kv) * d + e)];
    }
  return out;
}

/// Positions for s queries in a t-key cache: the last s slots before `filled` (a prefill or a
/// decode step; the keys after `filled` are masked).
inline std::vector<int32_t> positions(int64_t s, int64_t filled) {
  std::vector<int32_t> p(static_cast<size_t>(s));
  for (int64_t i = 0; i < s; ++i) p[size_t(i)] = int32_t(filled - s + i);
  return p;
}

}  // namespace luminal::attention_test
