// Neural-network building blocks on the GraphTensor API (PyTorch weight layouts and names).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "luminal/tensor.h"

namespace luminal {
class SafetensorsFile;
}  // namespace luminal

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

// ---- DLRM (facebookresearch/dlrm DLRM_Net, dot interaction, sum embedding bags) ----

/// The shape of a DLRM: bottom MLP widths ln_bot (ln_bot.back() is the embedding dim d), table
/// vocab sizes ln_emb, top MLP widths ln_top (ln_top[0] == d + n(n-1)/2 with n = 1 + tables,
/// ln_top.back() == 1), and the concrete batch, uniform bag size and index dtype.
struct DlrmConfig {
  std::vector<int64_t> ln_bot;
  std::vector<int64_t> ln_emb;
  std::vector<int64_t> ln_top;
  int64_t batch = 0;
  int64_t bag = 1;
  DType index_dtype = DType::I32;
  /// Embedding dim d (ln_bot.back()).
  int64_t dim() const;
  /// Number of sparse tables.
  int64_t num_tables() const;
  /// Throws "[dlrm] ..." on inconsistent configs.
  void validate() const;
  /// Infers ln_bot/ln_emb/ln_top from a weights file's tensor names and shapes (clear errors naming
  /// missing/mis-shaped tensors); the index dtype stays I32.
  static DlrmConfig from_weights(const SafetensorsFile& w, int64_t batch, int64_t bag);
};

/// DLRM dot interaction: T = [x, ly...] as [B, n, d], Z = T T^T, out = [x, Z[:, i, j] for i > j in
/// row-major order] of shape [B, d + n(n-1)/2].
GraphTensor dot_interaction(const GraphTensor& x, const std::vector<GraphTensor>& ly);

/// A built DLRM: inputs "dense_x" [B, ln_bot[0]] F32 and "indices_{k}" [B * bag]; out [B, 1] (an Output).
struct DlrmGraph {
  GraphTensor dense_x;
  std::vector<GraphTensor> indices;
  GraphTensor out;
};

/// The DLRM's inputs and weights as tensors; flat() is the DlrmMega input order: dense_x,
/// indices_0..k-1, emb_0..k-1, bottom (weight, bias) pairs, top (weight, bias) pairs.
struct DlrmTensors {
  GraphTensor dense_x;
  std::vector<GraphTensor> indices, tables, bot_w, bot_b, top_w, top_b;
  /// Declares every input of config c in g (weights persisted, PyTorch state_dict names).
  static DlrmTensors declare(Graph& g, const DlrmConfig& c);
  /// Splits a flat input list (DlrmMega order) back into fields; checks count, dims and dtypes.
  static DlrmTensors from_flat(const DlrmConfig& c, const std::vector<GraphTensor>& flat);
  /// The DlrmMega input order.
  std::vector<GraphTensor> flat() const;
};

/// The DLRM forward pass on given tensors: the body of build_dlrm and of DlrmMega's decomposition.
GraphTensor dlrm_forward(const DlrmConfig& c, const DlrmTensors& t);

/// The graph path: the model built from the GraphTensor API, nn::Linear and nn::EmbeddingBag.
DlrmGraph build_dlrm(Graph& g, const DlrmConfig& c);
/// The same model as one custom_op(DlrmMega) node (the megakernel on CUDA, its decomposition on CPU).
DlrmGraph build_dlrm_mega(Graph& g, const DlrmConfig& c);

}  // namespace luminal::nn
