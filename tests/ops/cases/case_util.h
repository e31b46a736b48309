// Helpers shared by the harness cases: raw primitive nodes, and plain reference loops over
// row-major arrays (obviously-correct double-precision expectations, independent of the runtimes).
#pragma once

#include <cmath>
#include <functional>
#include <numeric>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "luminal/tensor.h"
#include "ops/harness.h"

namespace luminal::ops_test {

/// Appends one primitive node reading `ins` through their current views (no tensor API involved).
inline GraphTensor prim(Graph& g, OpKind k, DType dt, const std::vector<GraphTensor>& ins,
                        std::vector<Expr> shape, double value = 0.0, int axis = -1) {
  Node n;
  n.kind = k;
  n.dtype = dt;
  for (const GraphTensor& t : ins) n.inputs.push_back({t.id, t.view});
  n.shape = std::move(shape);
  n.value = value;
  n.axis = axis;
  return GraphTensor(&g, g.add_node(std::move(n)));
}

/// A raw Output node copying t (through its view).
inline GraphTensor prim_output(Graph& g, const GraphTensor& t) {
  return prim(g, OpKind::Output, t.dtype, {t}, t.dims());
}

/// t read through a different view (same node).
inline GraphTensor with_view(GraphTensor t, ShapeTracker v) {
  t.view = std::move(v);
  return t;
}

/// Fixture case: input NAME.x -> f(x), expected NAME.out.
template <class F>
CaseIO fixture_unary(Graph& g, const std::string& name, F f) {
  CaseIO io;
  GraphTensor x = fixture_input(g, io, name + ".x");
  io.out(f(x), fixture(name + ".out").values);
  return io;
}

/// Elementwise map of one array.
inline std::vector<double> map1(const std::vector<double>& a,
                                const std::function<double(double)>& f) {
  std::vector<double> out;
  for (double x : a) out.push_back(f(x));
  return out;
}

/// Elementwise map of two equal-length arrays.
inline std::vector<double> map2(const std::vector<double>& a, const std::vector<double>& b,
                                const std::function<double(double, double)>& f) {
  std::vector<double> out;
  for (size_t i = 0; i < a.size(); ++i) out.push_back(f(a[i], b[i]));
  return out;
}

/// Reduces axis `axis` of a row-major [d0, d1, d2] array (outer x mid x inner).
inline std::vector<double> reduce3(const std::vector<double>& x, std::vector<int64_t> dims,
                                   int axis, bool is_max) {
  int64_t outer = 1, inner = 1, mid = dims[axis];
  for (int d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  std::vector<double> out;
  for (int64_t o = 0; o < outer; ++o) {
    for (int64_t i = 0; i < inner; ++i) {
      double acc = is_max ? -INFINITY : 0.0;
      for (int64_t m = 0; m < mid; ++m) {
        double v = x[(o * mid + m) * inner + i];
        acc = is_max ? std::max(acc, v) : acc + v;
      }
      out.push_back(acc);
    }
  }
  return out;
}

/// Permutes a row-major array: out dim i is in dim order[i].
inline std::vector<double> permute_ref(const std::vector<double>& x,
                                       const std::vector<int64_t>& dims,
                                       const std::vector<int>& order) {
  size_t r = dims.size();
  std::vector<int64_t> in_strides(r, 1), out_dims(r);
  for (size_t d = r - 1; d > 0; --d) in_strides[d - 1] = in_strides[d] * dims[d];
  for (size_t d = 0; d < r; ++d) out_dims[d] = dims[order[d]];
  std::vector<double> out(x.size());
  for (size_t flat = 0; flat < x.size(); ++flat) {
    int64_t rem = static_cast<int64_t>(flat), src = 0;
    for (size_t d = r; d-- > 0;) {
      src += (rem % out_dims[d]) * in_strides[order[d]];
      rem /= out_dims[d];
    }
    out[flat] = x[src];
  }
  return out;
}

}  // namespace luminal::ops_test
