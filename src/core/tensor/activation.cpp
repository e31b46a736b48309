// Activations as decompositions into primitives.
#include <cmath>
#include <numbers>

#include "core/tensor/helpers.h"

namespace luminal {

// relu(x) = x * cast(0 < x, dtype). Keep this exact form: lowerings may pattern-match it (e.g. a
// matmul ReLU epilogue). relu(-inf) is NaN in this form (-inf * 0).
GraphTensor GraphTensor::relu() const {
  detail::graph_of(*this, "relu");
  return *this * gt(0.0).cast(dtype);
}

// sigmoid(x) = 1 / (1 + exp(-x)).
GraphTensor GraphTensor::sigmoid() const {
  detail::require_float("sigmoid", *this);
  return ((-*this).exp() + 1.0).recip();
}

// tanh(x) = 2 * sigmoid(2x) - 1.
GraphTensor GraphTensor::tanh() const {
  detail::require_float("tanh", *this);
  return (*this * 2.0).sigmoid() * 2.0 - 1.0;
}

// silu(x) = x * sigmoid(x).
GraphTensor GraphTensor::silu() const {
  detail::require_float("silu", *this);
  return *this * sigmoid();
}

// gelu(x) = 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))).
GraphTensor GraphTensor::gelu() const {
  detail::require_float("gelu", *this);
  const double k = std::sqrt(2.0 / std::numbers::pi);
  const GraphTensor& x = *this;
  GraphTensor inner = (x + x * x * x * 0.044715) * k;
  return x * 0.5 * (inner.tanh() + 1.0);
}

}  // namespace luminal
