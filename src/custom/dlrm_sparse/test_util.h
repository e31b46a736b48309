// Test helpers for DlrmSparse: random jagged inputs, an independent plain-loop oracle (no graph,
// double accumulation, PyTorch EmbeddingBag semantics) and the graph + runtime binding.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "custom/dlrm_sparse/op.h"
#include "luminal/runtime.h"

namespace luminal::sparse_test {

/// One batch of inputs in host vectors; values already rounded to the tested dtype.
struct Case {
  custom::DlrmSparseShape s;
  std::vector<float> x;                    // [B, d]
  std::vector<std::vector<float>> tables;  // dense: [rows, d] values; u8: codes as floats
  std::vector<std::vector<float>> sb;      // u8 only: [rows, 2] (scale, bias)
  std::vector<std::vector<int64_t>> indices, offsets;
};

/// Rounds through bf16 when dt is BF16.
inline float round_to(DType dt, float v) { return dt == DType::BF16 ? float(bf16(v)) : v; }

/// Random data; bag lengths drawn from [0, max_bag] (so empty bags occur), sample 0's bag empty.
/// Closed offsets: the bags sit inside a KeyedJaggedTensor-like values array, after and before
/// ids of other keys that are out of this table's range (read, they would fail the case).
inline Case random_case(const custom::DlrmSparseShape& s, uint32_t seed, int max_bag = 3) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  Case c{s, {}, {}, {}, {}, {}};
  for (int64_t i = 0; i < s.batch * s.dim; ++i) c.x.push_back(round_to(s.dtype, u(rng)));
  const bool u8 = s.format == custom::TableFormat::RowwiseU8;
  for (int64_t rows : s.rows) {
    std::vector<float> t(size_t(rows * s.dim)), sb;
    for (float& v : t) v = u8 ? float(rng() % 256) : round_to(s.dtype, u(rng));
    for (int64_t r = 0; u8 && r < rows; ++r)
      sb.push_back(0.01f * (1 + r % 5)), sb.push_back(u(rng));
    c.tables.push_back(t);
    c.sb.push_back(sb);
    std::vector<int64_t> idx, off;
    if (s.closed) idx = {rows + 7, -3, rows};  // other keys' ids
    for (int64_t b = 0; b < s.batch; ++b) {
      off.push_back(int64_t(idx.size()));
      const int len = b == 0 ? 0 : int(rng() % uint32_t(max_bag + 1));
      for (int j = 0; j < len; ++j) idx.push_back(int64_t(rng() % uint64_t(rows)));
    }
    if (s.closed) off.push_back(int64_t(idx.size())), idx.push_back(rows + 100);
    c.indices.push_back(idx);
    c.offsets.push_back(off);
  }
  return c;
}

/// The oracle: out[b] = [x[b], pairs of T[b]] in double, in the shape's pair order.
inline std::vector<double> loops(const Case& c) {
  const custom::DlrmSparseShape& s = c.s;
  const int64_t d = s.dim, n = 1 + s.tables(), w = s.padded_width();  // pad columns stay 0
  std::vector<double> out(size_t(s.batch * w));
  for (int64_t b = 0; b < s.batch; ++b) {
    std::vector<std::vector<double>> T(size_t(n), std::vector<double>(size_t(d), 0.0));
    for (int64_t e = 0; e < d; ++e) T[0][size_t(e)] = c.x[size_t(b * d + e)];
    for (int64_t t = 0; t < s.tables(); ++t) {
      const auto& off = c.offsets[size_t(t)];
      const auto& idx = c.indices[size_t(t)];
      const int64_t lo = off[size_t(b)];
      const int64_t hi = s.closed || b + 1 < s.batch ? off[size_t(b + 1)] : int64_t(idx.size());
      for (int64_t j = lo; j < hi; ++j) {
        const int64_t r = idx[size_t(j)];
        for (int64_t e = 0; e < d; ++e) {
          double v = c.tables[size_t(t)][size_t(r * d + e)];
          if (s.format == custom::TableFormat::RowwiseU8)
            v = v * c.sb[size_t(t)][size_t(2 * r)] + c.sb[size_t(t)][size_t(2 * r + 1)];
          T[size_t(t + 1)][size_t(e)] += v;
        }
      }
      if (s.mode == nn::BagMode::Mean && hi > lo)
        for (double& v : T[size_t(t + 1)]) v /= double(hi - lo);
      // A BF16 op's bags are bf16 (summed in fp32, rounded once), as in a bf16 PyTorch model.
      if (s.dtype == DType::BF16)
        for (double& v : T[size_t(t + 1)]) v = double(float(bf16(float(v))));
    }
    double* o = out.data() + b * w;
    for (int64_t e = 0; e < d; ++e) o[e] = T[0][size_t(e)];
    for (int64_t i = 1; i < n; ++i)
      for (int64_t j = 0; j < i; ++j) {
        double z = 0;
        for (int64_t e = 0; e < d; ++e) z += T[size_t(i)][size_t(e)] * T[size_t(j)][size_t(e)];
        o[d + nn::pair_column(s.pairs, n, i, j)] = z;
      }
  }
  return out;
}

/// The op's inputs and its output in a graph.
struct Bound {
  std::vector<GraphTensor> in;
  GraphTensor out;
};

/// Declares the op's inputs (indices_t [nnz[t]]) and the custom node as an output; `split`: the
/// two-kernel form (a bags_only DlrmSparse on the table inputs, then DlrmSparseFinish with x).
inline Bound build(Graph& g, const custom::DlrmSparseShape& s, const std::vector<Expr>& nnz,
                   bool split = false) {
  Bound r;
  const bool u8 = s.format == custom::TableFormat::RowwiseU8;
  r.in.push_back(g.named_tensor("x", {s.batch, s.dim}, s.dtype));
  for (int64_t t = 0; t < s.tables(); ++t) {
    r.in.push_back(g.named_tensor(fmt::format("table_{}", t), {s.rows[size_t(t)], s.dim},
                                  u8 ? DType::U8 : s.dtype));
    if (u8) r.in.push_back(g.named_tensor(fmt::format("scale_bias_{}", t), {s.rows[size_t(t)], 2}));
    r.in.push_back(g.named_tensor(fmt::format("indices_{}", t), {nnz[size_t(t)]}, s.index_dtype));
    r.in.push_back(g.named_tensor(fmt::format("offsets_{}", t), {s.offsets_dim()}, s.index_dtype));
  }
  if (!split) {
    r.out = custom_op(std::make_shared<custom::DlrmSparse>(s), r.in).output();
    return r;
  }
  custom::DlrmSparseShape bags_shape = s;
  bags_shape.bags_only = true;
  const std::vector<GraphTensor> tables(r.in.begin() + 1, r.in.end());
  const GraphTensor bags = custom_op(std::make_shared<custom::DlrmSparse>(bags_shape), tables);
  r.out = custom_op(std::make_shared<custom::DlrmSparseFinish>(s), {r.in[0], bags}).output();
  return r;
}

/// The graph for a case: each nnz the symbol "nnz{t}" when `dynamic`, else the case's size.
inline Bound build_for(Graph& g, const Case& c, bool dynamic, bool split = false) {
  std::vector<Expr> nnz;
  for (size_t t = 0; t < c.indices.size(); ++t)
    nnz.push_back(dynamic ? Expr::sym(fmt::format("nnz{}", t))
                          : Expr(int64_t(c.indices[t].size())));
  return build(g, c.s, nnz, split);
}

/// The DynMap of a case for a dynamic graph.
inline DynMap dyn_of(const Case& c) {
  DynMap m;
  for (size_t t = 0; t < c.indices.size(); ++t)
    m[fmt::format("nnz{}", t)] = int64_t(c.indices[t].size());
  return m;
}

// Sets a float vector as dt (F32, BF16 or U8 codes).
inline void set_floats(Runtime& rt, const GraphTensor& t, const std::vector<float>& v, DType dt) {
  if (dt == DType::F32) return rt.set_data(t, std::span<const float>(v));
  if (dt == DType::BF16) {
    std::vector<bf16> h;
    for (float f : v) h.push_back(bf16(f));
    return rt.set_data(t, std::span<const bf16>(h));
  }
  std::vector<uint8_t> h;
  for (float f : v) h.push_back(uint8_t(f));
  rt.set_data(t, std::span<const uint8_t>(h));
}

inline void set_ints(Runtime& rt, const GraphTensor& t, const std::vector<int64_t>& v, DType dt) {
  if (dt == DType::I64) return rt.set_data(t, std::span<const int64_t>(v));
  const std::vector<int32_t> h(v.begin(), v.end());
  rt.set_data(t, std::span<const int32_t>(h));
}

/// Binds every input of the case.
inline void set_inputs(Runtime& rt, const Bound& b, const Case& c) {
  const custom::DlrmSparseShape& s = c.s;
  const bool u8 = s.format == custom::TableFormat::RowwiseU8;
  size_t i = 0;
  set_floats(rt, b.in[i++], c.x, s.dtype);
  for (size_t t = 0; t < size_t(s.tables()); ++t) {
    set_floats(rt, b.in[i++], c.tables[t], u8 ? DType::U8 : s.dtype);
    if (u8) set_floats(rt, b.in[i++], c.sb[t], DType::F32);
    set_ints(rt, b.in[i++], c.indices[t], s.index_dtype);
    set_ints(rt, b.in[i++], c.offsets[t], s.index_dtype);
  }
}

/// A shape with these tables (rows), d, mode, format, dtype and index dtype.
inline custom::DlrmSparseShape shape(int64_t batch, int64_t dim, std::vector<int64_t> rows,
                                     nn::BagMode mode = nn::BagMode::Sum,
                                     custom::TableFormat f = custom::TableFormat::Dense,
                                     DType dt = DType::F32, DType it = DType::I32) {
  custom::DlrmSparseShape s;
  s.batch = batch;
  s.dim = dim;
  s.rows = std::move(rows);
  s.mode = mode;
  s.format = f;
  s.dtype = dt;
  s.index_dtype = it;
  return s;
}

}  // namespace luminal::sparse_test
