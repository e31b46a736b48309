// Runs a DLRM fixture (tests/fixtures/dlrm/<name>: export.py's weights + inputs) on any runtime at
// any precision and bag layout; shared by the CPU tests and the GPU precision tests.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "luminal/models/dlrm.h"
#include "luminal/nn.h"
#include "luminal/runtime.h"
#include "luminal/safetensors.h"

namespace luminal::dlrm_fixture {

/// tests/fixtures/dlrm/<name>.
inline std::string dir(const std::string& name) {
  return std::string(LUMINAL_FIXTURES) + "/dlrm/" + name;
}

/// A fixture's files.
struct Files {
  SafetensorsFile w, in;
  /// Opens <dir>/weights.safetensors and <dir>/inputs.safetensors.
  explicit Files(const std::string& name)
      : w(SafetensorsFile::open(dir(name) + "/weights.safetensors")),
        in(SafetensorsFile::open(dir(name) + "/inputs.safetensors")) {}
};

/// A tensor's values as T (memcpy: safetensors data is unaligned).
template <class T>
std::vector<T> values(const SafeTensor& t) {
  std::vector<T> v(t.data.size() / sizeof(T));
  std::memcpy(v.data(), t.data.data(), v.size() * sizeof(T));
  return v;
}

/// Integer tensor values widened to i64.
inline std::vector<int64_t> ints(const SafeTensor& t) {
  if (t.dtype == DType::I64) return values<int64_t>(t);
  const std::vector<int32_t> v = values<int32_t>(t);
  return {v.begin(), v.end()};
}

/// The fixture's config at precision p: uniform bags of len(indices_0) / B, or jagged (offsets).
inline models::DlrmConfig config(const Files& f, Precision p, bool jagged,
                             models::SparsePath sparse = models::SparsePath::Graph) {
  const int64_t batch = f.in.at("dense_x").shape[0];
  const int64_t bag = jagged ? 1 : f.in.at("indices_0").shape[0] / batch;
  models::DlrmConfig c = models::DlrmConfig::from_weights(f.w, batch, bag);
  c.index_dtype = f.in.at("indices_0").dtype;
  c.precision = p;
  c.jagged = jagged;
  c.sparse = sparse;
  return c;
}

/// Binds `v` to t in t's integer dtype.
inline void bind_ints(Runtime& rt, const GraphTensor& t, const std::vector<int64_t>& v) {
  if (t.dtype == DType::I64) {
    rt.set_data(t, std::span<const int64_t>(v));
  } else {
    const std::vector<int32_t> n(v.begin(), v.end());
    rt.set_data(t, std::span<const int32_t>(n));
  }
}

/// Loads the weights at c's precision, binds the inputs, executes and returns the output.
inline std::vector<float> run(Runtime& rt, const models::DlrmGraph& g, const models::DlrmConfig& c,
                              const Files& f) {
  models::load_dlrm_weights(rt, g, c, f.w);
  rt.set_data(g.dense_x, std::span<const float>(values<float>(f.in.at("dense_x"))));
  DynMap dyn;
  for (size_t k = 0; k < g.indices.size(); ++k) {
    const std::vector<int64_t> idx = ints(f.in.at(fmt::format("indices_{}", k)));
    bind_ints(rt, g.indices[k], idx);
    if (!c.jagged) continue;
    dyn[models::DlrmConfig::nnz_name(static_cast<int64_t>(k))] = static_cast<int64_t>(idx.size());
    bind_ints(rt, g.offsets[k], ints(f.in.at(fmt::format("offsets_{}", k))));
  }
  rt.execute(dyn);
  return rt.get_f32(g.out);
}

/// Binds the fixture's first b samples to g's inputs (dense rows, bags and their indices) and
/// returns the dims to execute with (the batch when c.dynamic_batch, nnz_k when jagged).
inline DynMap bind_prefix(Runtime& rt, const models::DlrmGraph& g, const models::DlrmConfig& c,
                   const Files& f, int64_t b) {
  const std::vector<float> dense = values<float>(f.in.at("dense_x"));
  const int64_t width = c.ln_bot[0];
  rt.set_data(g.dense_x, std::span<const float>(dense.data(), size_t(b * width)));
  DynMap dyn;
  if (c.dynamic_batch) dyn[c.batch_symbol] = b;
  const int64_t batch = f.in.at("dense_x").shape[0];
  for (size_t k = 0; k < g.indices.size(); ++k) {
    const std::vector<int64_t> idx = ints(f.in.at(fmt::format("indices_{}", k)));
    std::vector<int64_t> off;
    if (c.jagged) {
      off = ints(f.in.at(fmt::format("offsets_{}", k)));
    } else {
      for (int64_t s = 0; s < batch; ++s) off.push_back(s * c.bag);
    }
    const int64_t end = b < batch ? off[size_t(b)] : int64_t(idx.size());
    bind_ints(rt, g.indices[k], {idx.begin(), idx.begin() + end});
    if (!c.jagged) continue;
    dyn[models::DlrmConfig::nnz_name(int64_t(k))] = end;
    bind_ints(rt, g.offsets[k], {off.begin(), off.begin() + b});
  }
  return dyn;
}

/// The fixture's PyTorch fp32 output.
inline std::vector<float> expected(const Files& f) { return values<float>(f.in.at("expected")); }

/// max |a - b| (NaN anywhere gives NaN; different lengths give NaN).
inline double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return NAN;
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(double(a[i]) - double(b[i]));
    if (std::isnan(d)) return d;
    m = std::max(m, d);
  }
  return m;
}

/// Spearman rank correlation (ties get their average rank).
inline double spearman(const std::vector<float>& a, const std::vector<float>& b) {
  auto ranks = [](const std::vector<float>& v) {
    std::vector<size_t> o(v.size());
    std::iota(o.begin(), o.end(), 0);
    std::stable_sort(o.begin(), o.end(), [&](size_t i, size_t j) { return v[i] < v[j]; });
    std::vector<double> r(v.size());
    for (size_t s = 0, e; s < o.size(); s = e) {
      for (e = s + 1; e < o.size() && v[o[e]] == v[o[s]]; ++e) {
      }
      for (size_t i = s; i < e; ++i) r[o[i]] = 0.5 * double(s + e - 1);
    }
    return r;
  };
  if (a.size() != b.size() || a.empty()) return NAN;
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double m = 0.5 * double(a.size() - 1);  // mean rank
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    cov += (ra[i] - m) * (rb[i] - m);
    va += (ra[i] - m) * (ra[i] - m);
    vb += (rb[i] - m) * (rb[i] - m);
  }
  return cov / std::sqrt(va * vb);
}

}  // namespace luminal::dlrm_fixture
