// Neural-network layers on the GraphTensor API (PyTorch weight layouts and names): linear, embedding
// bags, the DLRM dot interaction, rotary embeddings, RMSNorm, causal attention. Layers only: whole
// models live in luminal/models/, custom ops in src/custom/.
#pragma once

#include <optional>
#include <span>
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

/// Where a dot interaction puts the pair (i, j) of its n features (feature 0 is x).
enum class PairOrder {
  Lower,  // (1, 0), (2, 0), (2, 1), (3, 0), ...: facebookresearch/dlrm's strictly-lower triangle
  Upper,  // (0, 1), (0, 2), ..., (0, n - 1), (1, 2), ...: torchrec's triu_indices(n, n, 1)
};

/// The output column (after x's d columns) of the pair of features i != j among n.
constexpr int64_t pair_column(PairOrder order, int64_t n, int64_t i, int64_t j) {
  const int64_t hi = i > j ? i : j, lo = i > j ? j : i;
  return order == PairOrder::Lower ? hi * (hi - 1) / 2 + lo : lo * (2 * n - lo - 1) / 2 + (hi - lo - 1);
}

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


/// x @ w^T + b for a weight w (out, in) and bias b (out): Linear's math on given tensors.
GraphTensor linear(const GraphTensor& x, const GraphTensor& w, const GraphTensor& b);

/// DLRM dot interaction: T = [x, ly...] as [B, n, d], Z = T T^T, out = [x, Z[:, i, j] for the pairs
/// i != j in `order`] of shape [B, d + n(n-1)/2].
GraphTensor dot_interaction(const GraphTensor& x, const std::vector<GraphTensor>& ly,
                            PairOrder order = PairOrder::Lower);

/// One DCNv2 low-rank cross layer (torchrec LowRankCrossNet): x0 * (w (v x) + b) + x for x0, x
/// [B, n], v (rank, n), w (n, rank), b [n].
GraphTensor low_rank_cross(const GraphTensor& x0, const GraphTensor& x, const GraphTensor& v,
                           const GraphTensor& w, const GraphTensor& b);

/// PyTorch EmbeddingBag with jagged bags: bag b sums (or averages) table[indices[j]] for j in
/// [offsets[b], offsets[b + 1]) (the last bag ends at len(indices) unless `closed`; an empty bag
/// is zeros). offsets [B] (I32/I64), or [B + 1] when closed (the last one ends the last bag);
/// rows [nnz, d] = table[indices] (dequantized); out [B, d] in rows' dtype. Built as
/// mask [B, nnz] @ rows: ordinary ops, O(B * nnz * d) (the reference).
GraphTensor jagged_bag(const GraphTensor& rows, const GraphTensor& offsets, BagMode mode,
                       bool closed = false);

/// indices with every entry outside [offsets[0], offsets[B]) set to 0: closed bags read only those
/// (a KeyedJaggedTensor key's range of the shared values), so a gather of every index stays inside
/// the key's table. indices [nnz] and closed offsets [B + 1], both I32 or both I64.
GraphTensor indices_outside_bags_zeroed(const GraphTensor& indices, const GraphTensor& offsets);

/// A row-wise 8-bit table (FBGEMM's layout): value[r, j] ~ codes[r, j] * scale[r] + bias[r] with
/// scale = (max_r - min_r) / 255, bias = min_r; scale_bias is [rows, 2] = (scale, bias) per row.
struct RowwiseU8Table {
  int64_t rows = 0, dim = 0;
  std::vector<uint8_t> codes;     // [rows, dim]
  std::vector<float> scale_bias;  // [rows, 2]
  /// Dequantized value (r, j).
  float value(int64_t r, int64_t j) const;
};

/// Quantizes an fp32 table [rows, dim] row by row (round to nearest; a constant row gets scale 0).
RowwiseU8Table quantize_rowwise_u8(std::span<const float> table, int64_t rows, int64_t dim);

/// Rows `indices` of a row-wise 8-bit table in the graph, dequantized: codes [rows, d] U8,
/// scale_bias [rows, 2] F32, indices [n] -> [n, d] F32 = code * scale + bias.
GraphTensor gather_rowwise_u8(const GraphTensor& codes, const GraphTensor& scale_bias, const GraphTensor& indices);

/// How rotary frequencies are scaled: none (plain RoPE) or Llama 3.x's "llama3" rope_scaling.
enum class RopeType { Default, Llama3 };

/// Rotary embedding parameters as a Hugging Face config names them.
struct RopeConfig {
  double theta = 10000.0;
  RopeType type = RopeType::Default;
  double factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0;  // llama3 only
  int64_t original_max_position_embeddings = 8192;                     // llama3 only
};

/// inv_freq[i] = 1 / theta^(2i / head_dim) for i < head_dim / 2, in float32 as transformers
/// computes it; llama3 then divides low frequencies (wavelength > original / low_freq_factor) by
/// factor, keeps high ones (wavelength < original / high_freq_factor) and blends in between.
std::vector<float> rope_inv_freq(const RopeConfig& c, int64_t head_dim);

/// cos and sin tables [positions, head_dim / 2] (row-major): angle[p, i] = float(p * inv_freq[i]).
struct RopeTables {
  std::vector<float> cos, sin;
};
/// The tables for positions [0, positions).
RopeTables rope_tables(std::span<const float> inv_freq, int64_t positions);

/// Rotary embedding in transformers' rotate_half layout: x [s, heads, d], cos/sin [s, d/2]:
/// out[..., i] = x_i c_i - x_{i+d/2} s_i and out[..., i+d/2] = x_{i+d/2} c_i + x_i s_i.
GraphTensor apply_rope(const GraphTensor& x, const GraphTensor& cos, const GraphTensor& sin);

/// RMSNorm with weight (transformers' LlamaRMSNorm): normalized in f32, then cast back and
/// scaled by weight [dim] in x's dtype.
GraphTensor rms_norm(const GraphTensor& x, const GraphTensor& weight, double eps);

/// Causal grouped-query attention for one sequence: q [s, H, d], k and v [t, KV, d] (H a multiple
/// of KV; query head h reads kv head h / (H / KV)), q_pos [s] (integer) the absolute position of
/// each query; key j is visible to query i iff j <= q_pos[i]. Scores scaled by `scale`, softmax in
/// f32. Returns [s, H, d] in q's dtype.
GraphTensor causal_attention(const GraphTensor& q, const GraphTensor& k, const GraphTensor& v,
                             const GraphTensor& q_pos, double scale);

}  // namespace luminal::nn
