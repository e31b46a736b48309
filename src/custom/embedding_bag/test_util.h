// Test helpers for EmbeddingBag: random jagged inputs, an independent plain-loop oracle (no graph,
// double accumulation, PyTorch EmbeddingBag semantics) and the graph + runtime binding.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "custom/embedding_bag/op.h"
#include "luminal/runtime.h"

namespace luminal::bag_test {

/// One batch of inputs in host vectors; table values already rounded to the table dtype.
struct Case {
  int64_t rows = 0, dim = 0;
  nn::BagMode mode = nn::BagMode::Sum;
  DType dtype = DType::F32;        // table and output
  DType index_dtype = DType::I32;  // indices and offsets
  std::vector<float> table;        // [rows, dim]
  std::vector<int64_t> indices;    // [nnz]
  std::vector<int64_t> offsets;    // [B], or [B + 1] when closed
  bool closed = false;             // the last offset ends the last bag (include_last_offset)
  std::vector<float> weights;      // per_sample_weights [nnz] in the table's dtype, or empty
  /// Number of bags.
  int64_t batch() const { return int64_t(offsets.size()) - (closed ? 1 : 0); }
  /// "f32 table, i32 indices, sum, d 4, B 5, nnz 9" for failure messages.
  std::string describe() const {
    return fmt::format("{} table, {} indices, {}, d {}, B {}, nnz {}{}{}", dtype_name(dtype),
                       dtype_name(index_dtype), mode == nn::BagMode::Sum ? "sum" : "mean", dim,
                       batch(), indices.size(), closed ? ", closed offsets" : "",
                       weights.empty() ? "" : ", weighted");
  }
};

/// v rounded to dt (F32, BF16 or F16).
inline float round_to(DType dt, float v) {
  if (dt == DType::BF16) return float(bf16(v));
  if (dt == DType::F16) return float(f16(v));
  return v;
}

/// Random data; bag lengths drawn from [0, max_bag] with bag 0 empty and bag 1 (when B > 2) of
/// 2 * max_bag + 3 rows (a long bag: the kernel's unrolled loop and its remainder).
inline Case random_case(int64_t rows, int64_t dim, int64_t batch, nn::BagMode mode, DType dt,
                        DType it, uint32_t seed, int max_bag = 4) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Case c;
  c.rows = rows, c.dim = dim, c.mode = mode, c.dtype = dt, c.index_dtype = it;
  for (int64_t i = 0; i < rows * dim; ++i) c.table.push_back(round_to(dt, u(rng)));
  for (int64_t b = 0; b < batch; ++b) {
    c.offsets.push_back(int64_t(c.indices.size()));
    const int len = b == 0                  ? 0
                    : (b == 1 && batch > 2) ? 2 * max_bag + 3
                                            : int(rng() % uint32_t(max_bag + 1));
    for (int j = 0; j < len; ++j) c.indices.push_back(int64_t(rng() % uint64_t(rows)));
  }
  return c;
}

/// c with closed offsets inside a longer index list, as one key's bags in a KeyedJaggedTensor's
/// values: `lead` indices before its first bag, its bags' end appended to the offsets, then
/// `tail` more indices that no bag reads: ids past this table (another key's), an error if read.
inline Case closed_case(Case c, int64_t lead, int64_t tail, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<int64_t> idx;
  for (int64_t j = 0; j < lead; ++j) idx.push_back(c.rows + int64_t(rng() % 100u));
  idx.insert(idx.end(), c.indices.begin(), c.indices.end());
  for (int64_t& o : c.offsets) o += lead;
  c.offsets.push_back(int64_t(idx.size()));
  for (int64_t j = 0; j < tail; ++j) idx.push_back(c.rows + int64_t(rng() % 100u));
  c.indices = std::move(idx);
  c.closed = true;
  return c;
}

/// c with per-sample weights in [-2, 2) (rounded to the table's dtype), one per index.
inline Case weighted(Case c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-2.f, 2.f);
  c.weights.clear();
  for (size_t j = 0; j < c.indices.size(); ++j) c.weights.push_back(round_to(c.dtype, u(rng)));
  return c;
}

/// The oracle: out[b, e] = sum (mean) over the bag of table[indices[j], e] (times weights[j]), in double; NaN for a
/// bad bag (offsets negative, decreasing or past nnz, or an index outside [0, rows)), as the
/// kernel writes it.
inline std::vector<double> loops(const Case& c) {
  const int64_t B = c.batch(), d = c.dim, nnz = int64_t(c.indices.size());
  const int64_t n_off = int64_t(c.offsets.size());
  std::vector<double> out(size_t(B * d), 0.0);
  for (int64_t b = 0; b < B; ++b) {
    const int64_t lo = c.offsets[size_t(b)];
    const int64_t hi = b + 1 < n_off ? c.offsets[size_t(b + 1)] : nnz;
    bool bad = lo < 0 || hi < lo || hi > nnz;
    for (int64_t j = lo; !bad && j < hi; ++j)
      bad = c.indices[size_t(j)] < 0 || c.indices[size_t(j)] >= c.rows;
    if (bad) {
      std::fill(out.begin() + b * d, out.begin() + (b + 1) * d, std::nan(""));
      continue;
    }
    for (int64_t j = lo; j < hi; ++j)
      for (int64_t e = 0; e < d; ++e)
        out[size_t(b * d + e)] += c.table[size_t(c.indices[size_t(j)] * d + e)] *
                                  (c.weights.empty() ? 1.0 : double(c.weights[size_t(j)]));
    if (c.mode == nn::BagMode::Mean && hi > lo)
      for (int64_t e = 0; e < d; ++e) out[size_t(b * d + e)] /= double(hi - lo);
  }
  return out;
}

/// Relative tolerance of the op's output rounding (and the reference's second rounding of a
/// 16-bit mean: sum rounded, then the quotient).
inline double rtol_of(DType dt) {
  return dt == DType::BF16 ? 1.0 / 64 : (dt == DType::F16 ? 1.0 / 512 : 1e-5);
}

/// |got - want| <= atol + rtol |want| everywhere (got NaN where want is, else NaN fails); "" or
/// the first failure.
inline std::string mismatch(const std::vector<float>& got, const std::vector<double>& want,
                            double atol, double rtol) {
  if (got.size() != want.size())
    return fmt::format("{} elements, want {}", got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (std::isnan(want[i])
            ? !std::isnan(got[i])
            : !(std::abs(double(got[i]) - want[i]) <= atol + rtol * std::abs(want[i])))
      return fmt::format("element {}: got {}, want {}", i, got[i], want[i]);
  return "";
}

/// The op's inputs and its output in a graph.
struct Bound {
  GraphTensor table, indices, offsets, weights, out;
};

/// Declares table [rows, d], indices [nnz] and offsets [batch] ([batch + 1] closed) and the op's
/// node as the output.
inline Bound build(Graph& g, const Case& c, Expr nnz, Expr batch) {
  Bound r;
  r.table = g.named_tensor("table", {c.rows, c.dim}, c.dtype);
  r.indices = g.named_tensor("indices", {nnz}, c.index_dtype);
  r.offsets = g.named_tensor("offsets", {c.closed ? batch + Expr(1) : batch}, c.index_dtype);
  if (!c.weights.empty()) r.weights = g.named_tensor("weights", {nnz}, c.dtype);
  r.out = custom::embedding_bag(r.table, r.indices, r.offsets, c.mode, c.closed, r.weights).output();
  return r;
}

/// The graph for a case: nnz and B the symbols "nnz" and "B" when `dynamic`, else the case's.
inline Bound build_for(Graph& g, const Case& c, bool dynamic) {
  return dynamic ? build(g, c, Expr::sym("nnz"), Expr::sym("B"))
                 : build(g, c, Expr(int64_t(c.indices.size())), Expr(c.batch()));
}

/// The DynMap of a case for a dynamic graph.
inline DynMap dyn_of(const Case& c) {
  return DynMap{{"nnz", int64_t(c.indices.size())}, {"B", c.batch()}};
}

/// Sets float values as dt (F32, BF16 or F16).
inline void set_floats(Runtime& rt, const GraphTensor& t, const std::vector<float>& v, DType dt) {
  if (dt == DType::F32) return rt.set_data(t, std::span<const float>(v));
  if (dt == DType::BF16) {
    std::vector<bf16> h;
    for (float f : v) h.push_back(bf16(f));
    return rt.set_data(t, std::span<const bf16>(h));
  }
  std::vector<f16> h;
  for (float f : v) h.push_back(f16(f));
  rt.set_data(t, std::span<const f16>(h));
}

/// Sets integer values as dt (I32 or I64).
inline void set_ints(Runtime& rt, const GraphTensor& t, const std::vector<int64_t>& v, DType dt) {
  if (dt == DType::I64) return rt.set_data(t, std::span<const int64_t>(v));
  const std::vector<int32_t> h(v.begin(), v.end());
  rt.set_data(t, std::span<const int32_t>(h));
}

/// Binds every input of the case.
inline void set_inputs(Runtime& rt, const Bound& b, const Case& c) {
  set_floats(rt, b.table, c.table, c.dtype);
  set_ints(rt, b.indices, c.indices, c.index_dtype);
  set_ints(rt, b.offsets, c.offsets, c.index_dtype);
  if (!c.weights.empty()) set_floats(rt, b.weights, c.weights, c.dtype);
}

}  // namespace luminal::bag_test
