// MlpChain test cases shared by the CPU, emulated and GPU tests: random layers (values exact in bf16
// and f16), the double-loop oracle with the kernel's rounding points, and the graph.
#pragma once

#include <cmath>
#include <cstdint>
#include <optional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "custom/mlp_chain/op.h"
#include "luminal/graph.h"
#include "luminal/runtime.h"
#include "set_floats.h"

namespace luminal::mlp_chain_test {

using custom::ChainEpilogue;

/// One case: x [m, k], then per layer W [n, k_l] and b [n] (empty: no bias), as floats exact in the
/// case's dtype.
struct Case {
  int64_t m = 0, k = 0;
  std::vector<int64_t> widths;
  std::vector<ChainEpilogue> epi;
  DType dt = DType::BF16;
  std::vector<float> x;
  std::vector<std::vector<float>> w, b;
};

/// ReLU where relu[l], else nothing.
inline std::vector<ChainEpilogue> relus(const std::vector<bool>& relu) {
  std::vector<ChainEpilogue> e;
  for (bool r : relu) e.push_back(r ? ChainEpilogue::Relu : ChainEpilogue::None);
  return e;
}

/// DLRM-v2's dense tail in miniature: `crosses` low-rank cross layers (V without bias, then W with
/// the cross epilogue) of rank `rank` over width k, then Linear + ReLU layers `top` (the last without ReLU).
inline std::pair<std::vector<int64_t>, std::vector<ChainEpilogue>> cross_then_top(int64_t k, int crosses, int64_t rank,
                                                                                std::vector<int64_t> top) {
  std::vector<int64_t> widths;
  std::vector<ChainEpilogue> epi;
  for (int c = 0; c < crosses; ++c) widths.insert(widths.end(), {rank, k}), epi.insert(epi.end(), {ChainEpilogue::None, ChainEpilogue::Cross});
  for (size_t l = 0; l < top.size(); ++l)
    widths.push_back(top[l]), epi.push_back(l + 1 < top.size() ? ChainEpilogue::Relu : ChainEpilogue::None);
  return {widths, epi};
}

/// Values with 8 significant bits, scaled so every layer's outputs stay near 1 (and about half of
/// them negative before a ReLU). A layer before a cross layer (V) has no bias.
inline Case random_chain_case(int64_t m, int64_t k, std::vector<int64_t> widths, std::vector<ChainEpilogue> epi, DType dt,
                              uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> q(-127, 127);
  auto fill = [&](int64_t count, float scale) {
    std::vector<float> v(static_cast<size_t>(count));
    for (float& x : v) x = float(q(rng)) * scale;
    return v;
  };
  Case c{m, k, std::move(widths), std::move(epi), dt, fill(m * k, 1.f / 128), {}, {}};
  int64_t in = k;
  for (size_t l = 0; l < c.widths.size(); ++l) {
    const int64_t n = c.widths[l];
    const float scale = 2.f / 128 / std::sqrt(float(in));  // keeps each layer's output near its input's scale
    c.w.push_back(fill(n * in, std::ldexp(1.f, int(std::floor(std::log2(scale))))));
    const bool before_cross = l + 1 < c.widths.size() && c.epi[l + 1] == ChainEpilogue::Cross;
    c.b.push_back(before_cross ? std::vector<float>{} : fill(n, 1.f / 256));
    in = n;
  }
  return c;
}

/// random_chain_case with ReLU where relu[l].
inline Case random_case(int64_t m, int64_t k, std::vector<int64_t> widths, const std::vector<bool>& relu, DType dt,
                        uint32_t seed) {
  return random_chain_case(m, k, std::move(widths), relus(relu), dt, seed);
}

/// The chain in double, each layer's output rounded to the case's dtype (where the kernel and the
/// per-layer plan round), the last layer's too.
inline std::vector<double> loops(const Case& c) {
  auto round = [&](double v) {
    const float f = float(v);
    return c.dt == DType::BF16 ? double(bf16_bits_to_f32(f32_to_bf16_bits(f)))
           : c.dt == DType::F16 ? double(f16_bits_to_f32(f32_to_f16_bits(f)))
                                : double(f);
  };
  std::vector<std::vector<double>> ys{std::vector<double>(c.x.begin(), c.x.end())};  // ys[l]: layer l's input
  int64_t in = c.k;
  for (size_t l = 0; l < c.widths.size(); ++l) {
    const int64_t n = c.widths[l];
    const std::vector<double>& y = ys[l];
    std::vector<double> next(size_t(c.m * n));
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double s = c.b[l].empty() ? 0.0 : c.b[l][size_t(j)];
        for (int64_t p = 0; p < in; ++p) s += y[size_t(i * in + p)] * c.w[l][size_t(j * in + p)];
        if (c.epi[l] == ChainEpilogue::Relu && !(s > 0)) s = 0;
        if (c.epi[l] == ChainEpilogue::Cross) s = ys[0][size_t(i * n + j)] * s + ys[l - 1][size_t(i * n + j)];
        next[size_t(i * n + j)] = round(s);
      }
    ys.push_back(std::move(next));
    in = n;
  }
  return ys.back();
}

/// The first element where |got - want| > atol + rtol |want|, or "".
inline std::string mismatch(const std::vector<float>& got, const std::vector<double>& want, double atol, double rtol) {
  if (got.size() != want.size()) return fmt::format("{} elements, expected {}", got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= atol + rtol * std::abs(want[i])))
      return fmt::format("element {}: {} vs {}", i, got[i], want[i]);
  return "";
}

/// The graph's inputs and output (b[l] unset for a layer without bias).
struct Bound {
  GraphTensor x, out;
  std::vector<GraphTensor> w;
  std::vector<std::optional<GraphTensor>> b;
};

/// One MlpChain node over named inputs (the batch a dim "m" when dynamic), or with `chain` false
/// the same layers as ordinary graph ops (nn-style Linear + ReLU and nn::low_rank_cross's form:
/// what the rules find).
inline Bound build(Graph& g, const Case& c, bool dynamic, bool chain, int tile_m = 64) {
  const Expr m = dynamic ? Expr::sym("m") : Expr(c.m);
  Bound b;
  b.x = g.named_tensor("x", {m, c.k}, c.dt);
  int64_t in = c.k;
  for (size_t l = 0; l < c.widths.size(); ++l) {
    b.w.push_back(g.named_tensor(fmt::format("w{}", l), {c.widths[l], in}, c.dt));
    b.b.push_back(c.b[l].empty() ? std::nullopt
                                 : std::optional<GraphTensor>(g.named_tensor(fmt::format("b{}", l), {c.widths[l]}, c.dt)));
    in = c.widths[l];
  }
  if (chain) {
    b.out = custom::mlp_chain(b.x, b.w, b.b, c.epi, tile_m).output();
    return b;
  }
  std::vector<GraphTensor> ys{b.x};
  for (size_t l = 0; l < c.widths.size(); ++l) {
    GraphTensor y = ys[l].matmul(b.w[l].transpose(0, 1));
    if (b.b[l]) y = y + *b.b[l];
    if (c.epi[l] == ChainEpilogue::Relu) y = y.relu();
    if (c.epi[l] == ChainEpilogue::Cross) y = b.x * y + ys[l - 1];
    ys.push_back(y);
  }
  b.out = ys.back().output();
  return b;
}

/// v as t's dtype.
using test::set_floats;

/// Every input of c.
inline void set_inputs(Runtime& rt, const Bound& b, const Case& c) {
  set_floats(rt, b.x, c.x);
  for (size_t l = 0; l < c.w.size(); ++l) {
    set_floats(rt, b.w[l], c.w[l]);
    if (b.b[l]) set_floats(rt, *b.b[l], c.b[l]);
  }
}

}  // namespace luminal::mlp_chain_test
