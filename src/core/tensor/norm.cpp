// Softmax and normalizations over one axis (no affine parameters; nn adds those).
#include "core/tensor/helpers.h"

namespace luminal {

// softmax(x) = e / sum(e) with e = exp(x - max(x)), all along axis.
GraphTensor GraphTensor::softmax(int axis) const {
  detail::graph_of(*this, "softmax");
  detail::require_float("softmax", *this);
  const int a = detail::normalize_axis("softmax", axis, rank());
  const Expr& n = dims()[a];
  GraphTensor e = (*this - detail::unreduce(max(a), a, n)).exp();
  return e * detail::unreduce(e.sum(a).recip(), a, n);
}

// log_softmax(x) = d - log(sum(exp(d))) with d = x - max(x): a row's largest entry contributes
// exp(0) = 1 to the sum, so the log never sees 0 and masked (-inf) entries stay -inf.
GraphTensor GraphTensor::log_softmax(int axis) const {
  detail::graph_of(*this, "log_softmax");
  detail::require_float("log_softmax", *this);
  const int a = detail::normalize_axis("log_softmax", axis, rank());
  const Expr& n = dims()[a];
  GraphTensor d = *this - detail::unreduce(max(a), a, n);
  return d - detail::unreduce(d.exp().sum(a).log(), a, n);
}

// (x - mean) / sqrt(var + eps) with the biased variance mean((x - mean)^2).
GraphTensor GraphTensor::layer_norm(int axis, double eps) const {
  detail::graph_of(*this, "layer_norm");
  detail::require_float("layer_norm", *this);
  const int a = detail::normalize_axis("layer_norm", axis, rank());
  const Expr& n = dims()[a];
  GraphTensor d = *this - detail::unreduce(mean(a), a, n);
  GraphTensor inv_std = ((d * d).mean(a) + eps).sqrt().recip();
  return d * detail::unreduce(inv_std, a, n);
}

// x / sqrt(mean(x^2) + eps).
GraphTensor GraphTensor::rms_norm(int axis, double eps) const {
  detail::graph_of(*this, "rms_norm");
  detail::require_float("rms_norm", *this);
  const int a = detail::normalize_axis("rms_norm", axis, rank());
  GraphTensor inv_rms = ((*this * *this).mean(a) + eps).sqrt().recip();
  return *this * detail::unreduce(inv_rms, a, dims()[a]);
}

}  // namespace luminal
