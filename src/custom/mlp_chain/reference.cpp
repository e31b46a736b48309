// MlpChain's checks, its reference decomposition and the graph builder.
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "custom/mlp_chain/op.h"

namespace luminal::custom {

void MlpChainShape::validate() const {
  if (k < 1) throw std::invalid_argument(fmt::format("[mlp_chain] input width {} must be positive", k));
  if (widths.empty()) throw std::invalid_argument("[mlp_chain] no layers");
  if (relu.size() != widths.size())
    throw std::invalid_argument(fmt::format("[mlp_chain] {} relu flags for {} layers", relu.size(), widths.size()));
  for (size_t l = 0; l < widths.size(); ++l)
    if (widths[l] < 1 || widths[l] > (int64_t(1) << 30))
      throw std::invalid_argument(fmt::format("[mlp_chain] layer {} width {} out of [1, 2^30]", l, widths[l]));
  if (tile_m != 64 && tile_m != 32)
    throw std::invalid_argument(fmt::format("[mlp_chain] tile_m {}, expected 64 or 32", tile_m));
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    throw std::invalid_argument(fmt::format("[mlp_chain] dtype {}, expected f32, f16 or bf16", dtype_name(dtype)));
}

MlpChain::MlpChain(MlpChainShape shape) : shape_(std::move(shape)) { shape_.validate(); }

GraphTensor MlpChain::decompose(Graph& g, const std::vector<GraphTensor>& inputs) const {
  (void)g;
  const size_t layers = shape_.widths.size();
  if (inputs.size() != 1 + 2 * layers)
    throw std::invalid_argument(
        fmt::format("[mlp_chain] {} inputs, expected {} (x, then W and b per layer)", inputs.size(), 1 + 2 * layers));
  GraphTensor y = inputs[0];
  for (size_t l = 0; l < layers; ++l) {
    y = y.matmul(inputs[1 + 2 * l].transpose(0, 1)) + inputs[2 + 2 * l];
    if (shape_.relu[l]) y = y.relu();
  }
  return y;
}

GraphTensor mlp_chain(const GraphTensor& x, const std::vector<GraphTensor>& weights,
                      const std::vector<GraphTensor>& biases, const std::vector<bool>& relu, int tile_m) {
  MlpChainShape s;
  s.dtype = x.dtype;
  s.tile_m = tile_m;
  s.relu = relu;
  const auto k = x.rank() == 2 ? x.dims()[1].as_const() : std::nullopt;
  if (!k) throw std::invalid_argument(fmt::format("[mlp_chain] x {} must be [M, k] of a concrete k", shape_string(x.dims())));
  if (weights.size() != biases.size())
    throw std::invalid_argument(fmt::format("[mlp_chain] {} weights and {} biases", weights.size(), biases.size()));
  s.k = *k;
  for (size_t l = 0; l < weights.size(); ++l) {
    const GraphTensor& w = weights[l];
    const auto n = w.rank() == 2 ? w.dims()[0].as_const() : std::nullopt;
    if (!n) throw std::invalid_argument(fmt::format("[mlp_chain] W{} {} must be [n, k] of a concrete n", l, shape_string(w.dims())));
    s.widths.push_back(*n);
  }
  s.validate();
  auto expect = [&](const std::string& what, const GraphTensor& t, const std::vector<Expr>& shape) {
    bool same = t.rank() == int(shape.size());
    for (size_t d = 0; same && d < shape.size(); ++d) same = t.dims()[d].same(shape[d]);
    if (!same || t.dtype != s.dtype)
      throw std::invalid_argument(fmt::format("[mlp_chain] {} is {} {}, expected {} {}", what, shape_string(t.dims()),
                                              dtype_name(t.dtype), shape_string(shape), dtype_name(s.dtype)));
  };
  std::vector<GraphTensor> inputs{x};
  for (size_t l = 0; l < weights.size(); ++l) {
    expect(fmt::format("W{}", l), weights[l], {Expr(s.widths[l]), Expr(s.in_width(l))});
    expect(fmt::format("b{}", l), biases[l], {Expr(s.widths[l])});
    inputs.push_back(weights[l]);
    inputs.push_back(biases[l]);
  }
  return custom_op(std::make_shared<MlpChain>(s), inputs);
}

}  // namespace luminal::custom
