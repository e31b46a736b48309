// Neural-network building blocks on the GraphTensor API (PyTorch weight layouts and names).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "luminal/tensor.h"

namespace luminal::nn {

/// y = x @ W^T + b with W of shape (out, in) named prefix + ".weight", b named prefix + ".bias".
struct Linear {
  GraphTensor weight;
  std::optional<GraphTensor> bias;
  /// Declares the persisted weight (and bias) inputs.
  Linear(Graph& g, const std::string& prefix, Expr in, Expr out, bool with_bias = true,
         DType dt = DType::F32);
  /// Applies to x of shape [..., in].
  GraphTensor operator()(const GraphTensor& x) const;
};

/// How an embedding bag combines its rows.
enum class BagMode { Sum, Mean };

/// torch.nn.EmbeddingBag with uniform bags: table (vocab, dim) named `name`.
struct EmbeddingBag {
  GraphTensor weight;
  BagMode mode = BagMode::Sum;
  /// Declares the persisted table input.
  EmbeddingBag(Graph& g, const std::string& name, Expr vocab, Expr dim, BagMode mode = BagMode::Sum,
               DType dt = DType::F32);
  /// indices: [batch * bag] (I32/I64); returns [batch, dim]. bag = 1 is a plain lookup.
  GraphTensor operator()(const GraphTensor& indices, Expr bag) const;
};

/// out[i, ...] = table[idx[i], ...].
GraphTensor gather_rows(const GraphTensor& table, const GraphTensor& idx);
/// out = dest with rows idx[i] replaced by src[i] (KV-cache writes).
GraphTensor scatter_rows(const GraphTensor& dest, const GraphTensor& idx, const GraphTensor& src);

}  // namespace luminal::nn
