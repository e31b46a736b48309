// CrossGemm test cases shared by the CPU and GPU tests: random operands (exact in bf16 and f16),
// the double-loop oracle, the graph and its inputs in the case's dtype.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <random>
#include <span>
#include <vector>

#include <fmt/format.h>

#include "custom/cross_gemm/op.h"
#include "luminal/graph.h"
#include "luminal/runtime.h"
#include "set_floats.h"

namespace luminal::cross_gemm_test {

/// One case: u [m, k], w [n, k], b [n], x0 and xl [m, n], as floats exact in the case's dtype.
struct Case {
  int64_t m, n, k;
  DType dt;
  std::vector<float> u, w, b, x0, xl;
};

/// Values with 8 significant bits and small exponents: exact in f16 and bf16 alike.
inline Case random_case(int64_t m, int64_t n, int64_t k, DType dt, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> q(-127, 127);
  auto fill = [&](int64_t count, float scale) {
    std::vector<float> v(static_cast<size_t>(count));
    for (float& x : v) x = float(q(rng)) * scale;
    return v;
  };
  return {m, n, k, dt, fill(m * k, 1.f / 128), fill(n * k, 1.f / 1024), fill(n, 1.f / 128), fill(m * n, 1.f / 64),
          fill(m * n, 1.f / 64)};
}

/// out = x0 * (u W^T + b) + xl in double.
inline std::vector<double> loops(const Case& c) {
  std::vector<double> out(size_t(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double y = c.b[size_t(j)];
      for (int64_t p = 0; p < c.k; ++p) y += double(c.u[size_t(i * c.k + p)]) * c.w[size_t(j * c.k + p)];
      const size_t at = size_t(i * c.n + j);
      out[at] = double(c.x0[at]) * y + c.xl[at];
    }
  return out;
}

/// Per element |x0| (|b| + sum |u w|) + |xl|: the scale of the rounding errors of a 16-bit result
/// (the sum can cancel to far less).
inline std::vector<double> magnitudes(const Case& c) {
  std::vector<double> out(size_t(c.m * c.n));
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double y = std::abs(c.b[size_t(j)]);
      for (int64_t p = 0; p < c.k; ++p) y += std::abs(double(c.u[size_t(i * c.k + p)]) * c.w[size_t(j * c.k + p)]);
      const size_t at = size_t(i * c.n + j);
      out[at] = std::abs(c.x0[at]) * y + std::abs(c.xl[at]);
    }
  return out;
}

/// The first element where |got - want| > atol + rtol * scale, or "".
inline std::string mismatch(const std::vector<float>& got, const std::vector<double>& want,
                            const std::vector<double>& scale, double atol, double rtol) {
  if (got.size() != want.size()) return fmt::format("{} elements, expected {}", got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= atol + rtol * scale[i]))
      return fmt::format("element {}: {} vs {} (scale {})", i, got[i], want[i], scale[i]);
  return "";
}

/// The graph's inputs and output.
struct Bound {
  GraphTensor u, w, b, x0, xl, out;
};

/// A kernel core to test: CrossGemmShape's wgmma, stages and overlap.
struct Core {
  bool wgmma = true;
  int stages = 3;
  bool overlap = false;
  const char* name = "wgmma";
  int tile_m = 128;
};
/// Every core: on a 9.0 device the four wgmma forms and mma.sync; elsewhere mma.sync each time.
inline const std::vector<Core> kCores = {
    {true, 3, false, "wgmma"}, {true, 3, true, "wgmma 3 overlapped"}, {true, 4, true, "wgmma 4 overlapped"},
    {true, 3, false, "wgmma 64-row tiles", 64}, {false, 3, false, "mma.sync"}};

/// One CrossGemm node over named inputs (the batch a dim "m" when dynamic; the core as the op's).
inline Bound build(Graph& g, const Case& c, bool dynamic = false, Core core = {}) {
  const Expr m = dynamic ? Expr::sym("m") : Expr(c.m);
  Bound b;
  b.u = g.named_tensor("u", {m, c.k}, c.dt);
  b.w = g.named_tensor("w", {c.n, c.k}, c.dt);
  b.b = g.named_tensor("b", {c.n}, c.dt);
  b.x0 = g.named_tensor("x0", {m, c.n}, c.dt);
  b.xl = g.named_tensor("xl", {m, c.n}, c.dt);
  b.out = custom::cross_gemm(b.u, b.w, b.b, b.x0, b.xl, core.wgmma, core.stages, core.overlap, core.tile_m).output();
  return b;
}

/// v as t's dtype.
using test::set_floats;

/// Every input of c.
inline void set_inputs(Runtime& rt, const Bound& b, const Case& c) {
  set_floats(rt, b.u, c.u), set_floats(rt, b.w, c.w), set_floats(rt, b.b, c.b), set_floats(rt, b.x0, c.x0), set_floats(rt, b.xl, c.xl);
}

}  // namespace luminal::cross_gemm_test
