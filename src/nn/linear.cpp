// nn::Linear and nn::linear: y = x @ W^T + b with PyTorch's (out, in) weight layout.
#include "luminal/nn.h"

namespace luminal::nn {

Linear::Linear(Graph& g, const std::string& prefix, Expr in, Expr out, bool with_bias, DType dt)
    : weight(g.named_tensor(prefix + ".weight", {out, in}, dt).persist()) {
  if (with_bias) bias = g.named_tensor(prefix + ".bias", {out}, dt).persist();
}

// W^T is a transposed view, so the matmul reads the weight in place.
GraphTensor Linear::operator()(const GraphTensor& x) const {
  GraphTensor y = x.matmul(weight.transpose(0, 1));
  if (bias) y = y + *bias;
  return y;
}

GraphTensor linear(const GraphTensor& x, const GraphTensor& w, const GraphTensor& b) {
  return x.matmul(w.transpose(0, 1)) + b;
}

}  // namespace luminal::nn
