// MlpChain's checks, its reference decomposition and the graph builders.
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "custom/mlp_chain/op.h"

namespace luminal::custom {

void MlpChainShape::validate() const {
  if (k < 1) throw std::invalid_argument(fmt::format("[mlp_chain] input width {} must be positive", k));
  if (widths.empty()) throw std::invalid_argument("[mlp_chain] no layers");
  if (epilogue.size() != widths.size())
    throw std::invalid_argument(fmt::format("[mlp_chain] {} epilogues for {} layers", epilogue.size(), widths.size()));
  if (!bias.empty() && bias.size() != widths.size())
    throw std::invalid_argument(fmt::format("[mlp_chain] {} bias flags for {} layers", bias.size(), widths.size()));
  for (size_t l = 0; l < widths.size(); ++l) {
    if (widths[l] < 1 || widths[l] > (int64_t(1) << 30))
      throw std::invalid_argument(fmt::format("[mlp_chain] layer {} width {} out of [1, 2^30]", l, widths[l]));
    if (epilogue[l] != ChainEpilogue::Cross) continue;
    // x0 * (.) + y_{l-2}: x0 is the chain's input and y_{l-2} layer l - 1's, both as wide as this layer.
    if (l == 0 || widths[l] != k || in_width(l - 1) != k || !has_bias(l))
      throw std::invalid_argument(fmt::format(
          "[mlp_chain] cross layer {} needs a layer before it, a bias, and its width ({}) equal to the chain's input "
          "width ({}) and to layer {}'s input width",
          l, widths[l], k, l == 0 ? 0 : l - 1));
  }
  if (tile_m != 64 && tile_m != 32)
    throw std::invalid_argument(fmt::format("[mlp_chain] tile_m {}, expected 64 or 32", tile_m));
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    throw std::invalid_argument(fmt::format("[mlp_chain] dtype {}, expected f32, f16 or bf16", dtype_name(dtype)));
}

MlpChain::MlpChain(MlpChainShape shape) : shape_(std::move(shape)) { shape_.validate(); }

GraphTensor MlpChain::decompose(Graph& g, const std::vector<GraphTensor>& inputs) const {
  (void)g;
  const size_t expected = shape_.input_count();
  if (inputs.size() != expected)
    throw std::invalid_argument(
        fmt::format("[mlp_chain] {} inputs, expected {} (x, then W and b per layer)", inputs.size(), expected));
  std::vector<GraphTensor> ys{inputs[0]};  // ys[l]: layer l's input
  size_t at = 1;
  for (size_t l = 0; l < shape_.widths.size(); ++l) {
    GraphTensor y = ys[l].matmul(inputs[at++].transpose(0, 1));
    if (shape_.has_bias(l)) y = y + inputs[at++];
    if (shape_.epilogue[l] == ChainEpilogue::Relu) y = y.relu();
    if (shape_.epilogue[l] == ChainEpilogue::Cross) y = inputs[0] * y + ys[l - 1];
    ys.push_back(y);
  }
  return ys.back();
}

GraphTensor mlp_chain(const GraphTensor& x, const std::vector<GraphTensor>& weights,
                      const std::vector<std::optional<GraphTensor>>& biases, const std::vector<ChainEpilogue>& epilogue,
                      int tile_m) {
  MlpChainShape s;
  s.dtype = x.dtype;
  s.tile_m = tile_m;
  s.epilogue = epilogue;
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
    s.bias.push_back(biases[l].has_value());
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
    inputs.push_back(weights[l]);
    if (!biases[l]) continue;
    expect(fmt::format("b{}", l), *biases[l], {Expr(s.widths[l])});
    inputs.push_back(*biases[l]);
  }
  return custom_op(std::make_shared<MlpChain>(s), inputs);
}

GraphTensor linear_chain(const GraphTensor& x, const std::vector<GraphTensor>& weights,
                         const std::vector<GraphTensor>& biases, const std::vector<bool>& relu, int tile_m) {
  if (relu.size() != weights.size())
    throw std::invalid_argument(fmt::format("[mlp_chain] {} relu flags for {} layers", relu.size(), weights.size()));
  std::vector<ChainEpilogue> epilogue;
  for (bool r : relu) epilogue.push_back(r ? ChainEpilogue::Relu : ChainEpilogue::None);
  return mlp_chain(x, weights, std::vector<std::optional<GraphTensor>>(biases.begin(), biases.end()), epilogue, tile_m);
}

}  // namespace luminal::custom
