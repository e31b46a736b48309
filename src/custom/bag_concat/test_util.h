// BagConcat test cases shared by the CPU and GPU tests: random multi-hot bags (empty ones too) over
// several tables, the double-loop oracle, the graph and the inputs.
#pragma once

#include <cstdint>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "custom/bag_concat/op.h"
#include "luminal/graph.h"
#include "luminal/runtime.h"

namespace luminal::bag_concat_test {

/// One case: x, tables (bf16-exact values), per-table indices and offsets.
struct Case {
  int64_t batch, d;
  std::vector<int64_t> rows;
  DType dt, it;
  nn::BagMode mode;
  std::vector<float> x;                      // [B, d]
  std::vector<std::vector<float>> tables;    // [rows_t, d] each (bf16-exact values)
  std::vector<std::vector<int64_t>> indices, offsets;
  bool closed = false;  // offsets [B + 1] (the last ends the last bag)
};

/// v rounded to bf16 (so bf16 and f32 cases hold the same values).
inline float bf16_exact(float v) { return float(bf16(v)); }

/// batch samples over tables of `rows` rows of width d; bag lengths 0..max_len.
inline Case random_case(int64_t batch, int64_t d, std::vector<int64_t> rows, DType dt, DType it, nn::BagMode mode,
                        uint32_t seed, int64_t max_len = 6) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Case c{batch, d, rows, dt, it, mode, {}, {}, {}, {}};
  for (int64_t i = 0; i < batch * d; ++i) c.x.push_back(bf16_exact(u(rng)));
  for (int64_t r : rows) {
    std::vector<float> t;
    for (int64_t i = 0; i < r * d; ++i) t.push_back(bf16_exact(u(rng)));
    c.tables.push_back(t);
    std::vector<int64_t> idx, off;
    for (int64_t b = 0; b < batch; ++b) {
      off.push_back(int64_t(idx.size()));
      const int64_t len = std::uniform_int_distribution<int64_t>(0, max_len)(rng);  // empty bags too
      for (int64_t j = 0; j < len; ++j) idx.push_back(std::uniform_int_distribution<int64_t>(0, r - 1)(rng));
    }
    if (idx.empty()) idx.push_back(0), off.back() = 0;  // at least one index (a 0-length input)
    c.indices.push_back(idx);
    c.offsets.push_back(off);
  }
  return c;
}

/// c with closed offsets inside longer index lists (a KeyedJaggedTensor's keys): per table, 3 ids past
/// the table before its bags and 5 after them, read by no bag (an error if read).
inline Case closed_case(Case c) {
  for (size_t t = 0; t < c.rows.size(); ++t) {
    std::vector<int64_t> idx(3, c.rows[t] + 7);
    idx.insert(idx.end(), c.indices[t].begin(), c.indices[t].end());
    for (int64_t& o : c.offsets[t]) o += 3;
    c.offsets[t].push_back(int64_t(idx.size()));
    idx.insert(idx.end(), 5, c.rows[t] + 11);
    c.indices[t] = std::move(idx);
  }
  c.closed = true;
  return c;
}

/// The double-loop oracle: [B, (1 + F) d].
inline std::vector<double> loops(const Case& c) {
  const int64_t w = (1 + int64_t(c.rows.size())) * c.d;
  std::vector<double> out(size_t(c.batch * w));
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t k = 0; k < c.d; ++k) out[size_t(b * w + k)] = c.x[size_t(b * c.d + k)];
    for (size_t t = 0; t < c.rows.size(); ++t) {
      const int64_t lo = c.offsets[t][size_t(b)];
      const int64_t hi = b + 1 < int64_t(c.offsets[t].size()) ? c.offsets[t][size_t(b + 1)] : int64_t(c.indices[t].size());
      for (int64_t k = 0; k < c.d; ++k) {
        double s = 0;
        for (int64_t j = lo; j < hi; ++j) s += c.tables[t][size_t(c.indices[t][size_t(j)] * c.d + k)];
        if (c.mode == nn::BagMode::Mean && hi > lo) s /= double(hi - lo);
        out[size_t(b * w + int64_t(1 + t) * c.d + k)] = s;
      }
    }
  }
  return out;
}

/// The graph's inputs and output.
struct Bound {
  GraphTensor x, out;
  std::vector<GraphTensor> tables, indices, offsets;
};

/// The graph: bag_concat of the case's inputs (cast to f32 when cast); with dynamic, B and every nnz
/// are symbols; with split, x0 = concat(x, bags_concat(...)) (the bags without x, then a concat).
inline Bound build(Graph& g, const Case& c, bool dynamic = false, bool cast = true, bool split = false) {
  auto dim = [&](const std::string& name, int64_t v) { return dynamic ? Expr::sym(name) : Expr(v); };
  Bound b;
  b.x = g.named_tensor("x", {dim("B", c.batch), Expr(c.d)}, c.dt);
  for (size_t t = 0; t < c.rows.size(); ++t) {
    b.tables.push_back(g.named_tensor(fmt::format("table_{}", t), {c.rows[t], c.d}, c.dt));
    b.indices.push_back(g.named_tensor(fmt::format("indices_{}", t),
                                       {dim(fmt::format("nnz_{}", t), int64_t(c.indices[t].size()))}, c.it));
    b.offsets.push_back(g.named_tensor(fmt::format("offsets_{}", t), {dim("B", c.batch) + Expr(c.closed ? 1 : 0)}, c.it));
  }
  GraphTensor x0 = split ? concat({b.x, custom::bags_concat(b.tables, b.indices, b.offsets, c.mode, c.dt, false, {},
                                                              c.closed)}, 1)
                        : custom::bag_concat(b.x, b.tables, b.indices, b.offsets, c.mode, false, {}, c.closed);
  b.out = (cast ? x0.cast(DType::F32) : x0).output();
  return b;
}

/// The symbols' values for a graph built with dynamic = true.
inline DynMap dyn_of(const Case& c) {
  DynMap m{{"B", c.batch}};
  for (size_t t = 0; t < c.rows.size(); ++t) m[fmt::format("nnz_{}", t)] = int64_t(c.indices[t].size());
  return m;
}

/// Sets floats as dt (F32 or BF16).
inline void set_floats(Runtime& rt, const GraphTensor& t, const std::vector<float>& v, DType dt) {
  if (dt == DType::F32) return rt.set_data(t, std::span<const float>(v));
  std::vector<bf16> h(v.begin(), v.end());
  rt.set_data(t, std::span<const bf16>(h));
}

/// Sets integers as it (I32 or I64).
inline void set_ints(Runtime& rt, const GraphTensor& t, const std::vector<int64_t>& v, DType it) {
  if (it == DType::I64) return rt.set_data(t, std::span<const int64_t>(v));
  std::vector<int32_t> n(v.begin(), v.end());
  rt.set_data(t, std::span<const int32_t>(n));
}

/// Sets every input of the case.
inline void set_inputs(Runtime& rt, const Bound& b, const Case& c) {
  set_floats(rt, b.x, c.x, c.dt);
  for (size_t t = 0; t < c.rows.size(); ++t) {
    set_floats(rt, b.tables[t], c.tables[t], c.dt);
    set_ints(rt, b.indices[t], c.indices[t], c.it);
    set_ints(rt, b.offsets[t], c.offsets[t], c.it);
  }
}

/// A case over row-wise u8 tables (DLRM int8): codes and per-row (scale, bias); c.tables holds the
/// dequantized rows code * scale + bias (what loops() reads).
struct U8Case {
  Case c;
  std::vector<std::vector<uint8_t>> codes;
  std::vector<std::vector<float>> scale_bias;  // [rows, 2] per table
};

/// c's tables replaced by random codes, scales in [0.001, 0.01) and biases in [-0.5, 0.5).
inline U8Case u8_case(Case c, uint32_t seed) {
  std::mt19937 rng(seed);
  U8Case u{c, {}, {}};
  for (size_t t = 0; t < c.rows.size(); ++t) {
    std::vector<uint8_t> q;
    std::vector<float> sb;
    for (int64_t r = 0; r < c.rows[t]; ++r) {
      sb.push_back(std::uniform_real_distribution<float>(0.001f, 0.01f)(rng));
      sb.push_back(std::uniform_real_distribution<float>(-0.5f, 0.5f)(rng));
      for (int64_t k = 0; k < c.d; ++k) {
        q.push_back(uint8_t(std::uniform_int_distribution<int>(0, 255)(rng)));
        u.c.tables[t][size_t(r * c.d + k)] = float(q.back()) * sb[size_t(2 * r)] + sb[size_t(2 * r + 1)];
      }
    }
    u.codes.push_back(std::move(q));
    u.scale_bias.push_back(std::move(sb));
  }
  return u;
}

/// The graph's inputs and output for a U8Case.
struct U8Bound {
  GraphTensor x, out;
  std::vector<GraphTensor> tables, scale_bias, indices, offsets;
};

/// bag_concat over the u8 case's inputs (static shapes), the output cast to f32; split as build's.
inline U8Bound build_u8(Graph& g, const U8Case& u, bool split = false) {
  const Case& c = u.c;
  U8Bound b;
  b.x = g.named_tensor("x", {c.batch, c.d}, c.dt);
  for (size_t t = 0; t < c.rows.size(); ++t) {
    b.tables.push_back(g.named_tensor(fmt::format("table_{}", t), {c.rows[t], c.d}, DType::U8));
    b.scale_bias.push_back(g.named_tensor(fmt::format("scale_bias_{}", t), {c.rows[t], 2}));
    b.indices.push_back(g.named_tensor(fmt::format("indices_{}", t), {int64_t(c.indices[t].size())}, c.it));
    b.offsets.push_back(g.named_tensor(fmt::format("offsets_{}", t), {c.batch + (c.closed ? 1 : 0)}, c.it));
  }
  const GraphTensor x0 =
      split ? concat({b.x, custom::bags_concat(b.tables, b.indices, b.offsets, c.mode, c.dt, false, b.scale_bias,
                                                c.closed)}, 1)
            : custom::bag_concat(b.x, b.tables, b.indices, b.offsets, c.mode, false, b.scale_bias, c.closed);
  b.out = x0.cast(DType::F32).output();
  return b;
}

/// Sets every input of the u8 case.
inline void set_u8_inputs(Runtime& rt, const U8Bound& b, const U8Case& u) {
  set_floats(rt, b.x, u.c.x, u.c.dt);
  for (size_t t = 0; t < u.c.rows.size(); ++t) {
    rt.set_data(b.tables[t], std::span<const uint8_t>(u.codes[t]));
    rt.set_data(b.scale_bias[t], std::span<const float>(u.scale_bias[t]));
    set_ints(rt, b.indices[t], u.c.indices[t], u.c.it);
    set_ints(rt, b.offsets[t], u.c.offsets[t], u.c.it);
  }
}

}  // namespace luminal::bag_concat_test
