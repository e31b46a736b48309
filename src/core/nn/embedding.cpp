// nn::EmbeddingBag (uniform bags) and row gather/scatter helpers.
#include <stdexcept>

#include <fmt/format.h>

#include "luminal/nn.h"

namespace luminal::nn {

EmbeddingBag::EmbeddingBag(Graph& g, const std::string& name, Expr vocab, Expr dim, BagMode mode,
                           DType dt)
    : weight(g.named_tensor(name, {vocab, dim}, dt).persist()), mode(mode) {}

// [B * bag] indices -> gathered rows [B * bag, dim] -> [B, bag, dim] -> reduce over the bag.
GraphTensor EmbeddingBag::operator()(const GraphTensor& indices, Expr bag) const {
  if (indices.rank() != 1) {
    throw std::invalid_argument(fmt::format(
        "[embedding_bag] indices must be 1-D [batch * bag], got {}", shape_string(indices.dims())));
  }
  GraphTensor rows = weight.gather(indices).split_dims(0, bag);
  return mode == BagMode::Sum ? rows.sum(1) : rows.mean(1);
}

GraphTensor gather_rows(const GraphTensor& table, const GraphTensor& idx) {
  return table.gather(idx);
}

GraphTensor scatter_rows(const GraphTensor& dest, const GraphTensor& idx, const GraphTensor& src) {
  return dest.scatter(idx, src);
}

}  // namespace luminal::nn
