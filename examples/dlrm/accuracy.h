// Accuracy of a DLRM run against PyTorch's fp32 `expected`: max abs diff and rank correlation.
#pragma once

#include <vector>

#include "luminal/precision.h"

namespace dlrm {

/// max |a - b| over equal-length vectors (NaN anywhere gives NaN).
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b);

/// Spearman rank correlation of a and b (Pearson correlation of their ranks, ties given their
/// average rank); NaN anywhere gives NaN, and a constant vector gives 1 when both are constant.
double spearman(const std::vector<float>& a, const std::vector<float>& b);

/// The default max-abs-diff tolerance vs fp32 at a precision: fp32 1e-5, tf32 2e-3, bf16 1e-2,
/// int8 2e-2 (luminal-cpp issue 8's targets).
double default_tol(luminal::Precision p);

/// Every precision must keep the predictions' order: Spearman >= this.
inline constexpr double kMinSpearman = 0.99;

}  // namespace dlrm
