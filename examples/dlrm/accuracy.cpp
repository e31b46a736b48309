// Accuracy of a DLRM run against PyTorch's fp32 `expected`.
#include "accuracy.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

namespace dlrm {

namespace {

void check_sizes(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) {
    throw std::invalid_argument(
        fmt::format("[dlrm] comparing {} values with {}", a.size(), b.size()));
  }
}

// Rank of each value (0-based), ties sharing their average rank.
std::vector<double> ranks(const std::vector<float>& v) {
  std::vector<size_t> order(v.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t i, size_t j) { return v[i] < v[j]; });
  std::vector<double> r(v.size());
  for (size_t s = 0; s < order.size();) {
    size_t e = s + 1;
    while (e < order.size() && v[order[e]] == v[order[s]]) ++e;
    for (size_t i = s; i < e; ++i) r[order[i]] = 0.5 * static_cast<double>(s + e - 1);
    s = e;
  }
  return r;
}

}  // namespace

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  check_sizes(a, b);
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    if (std::isnan(d)) return d;
    m = std::max(m, d);
  }
  return m;
}

double spearman(const std::vector<float>& a, const std::vector<float>& b) {
  check_sizes(a, b);
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) || std::isnan(b[i])) return NAN;
  }
  const std::vector<double> ra = ranks(a), rb = ranks(b);
  const double n = static_cast<double>(a.size());
  const double ma = std::accumulate(ra.begin(), ra.end(), 0.0) / n;
  const double mb = std::accumulate(rb.begin(), rb.end(), 0.0) / n;
  double cov = 0, va = 0, vb = 0;
  for (size_t i = 0; i < ra.size(); ++i) {
    cov += (ra[i] - ma) * (rb[i] - mb);
    va += (ra[i] - ma) * (ra[i] - ma);
    vb += (rb[i] - mb) * (rb[i] - mb);
  }
  if (va == 0 || vb == 0) return va == vb ? 1.0 : 0.0;  // a constant vector has no order to keep
  return cov / std::sqrt(va * vb);
}

double default_tol(luminal::Precision p) {
  switch (p) {
    case luminal::Precision::F32:
    case luminal::Precision::TF32X3:  // fp32 accuracy is what the mode is for
      return 1e-5;
    case luminal::Precision::TF32:
      return 2e-3;
    case luminal::Precision::BF16:
      return 1e-2;
    case luminal::Precision::Int8:
      return 2e-2;
    case luminal::Precision::FP8:
      return 1e-1;
  }
  return 1e-5;
}

}  // namespace dlrm
