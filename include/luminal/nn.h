// Neural-network building blocks on the GraphTensor API (PyTorch weight layouts and names).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "luminal/precision.h"
#include "luminal/tensor.h"

namespace luminal {
class SafetensorsFile;
class SafetensorsCheckpoint;
class Runtime;
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

// ---- DLRM (facebookresearch/dlrm DLRM_Net, dot interaction) ----

/// Where a DLRM's sparse path (embedding bags + dot interaction) comes from: ordinary ops in the
/// graph, the fused custom op custom::DlrmSparse (one kernel on CUDA, its decomposition on CPU,
/// after the bottom MLP since it reads x), or Split: the same op as two kernels, the bags and the
/// pairs among them (no x, so the captured graph runs it beside the bottom MLP), then a small one
/// that writes x and the pairs with x (custom::DlrmSparseFinish).
enum class SparsePath { Graph, Fused, Split };

/// "graph" / "fused" / "split".
std::string_view sparse_path_name(SparsePath p);
/// True for the paths built on custom::DlrmSparse (Fused, Split): they read offsets (jagged
/// bags) and write a padded top input.
bool uses_sparse_op(SparsePath p);

/// The shape of a DLRM: bottom MLP widths ln_bot (ln_bot.back() is the embedding dim d), table
/// vocab sizes ln_emb, top MLP widths ln_top (ln_top[0] == d + n(n-1)/2 with n = 1 + tables,
/// ln_top.back() == 1), the concrete batch, the bags (uniform of `bag` rows, or jagged: offsets_k
/// [B] plus indices_k of dynamic length nnz_k), and how it computes (precision, sparse path).
struct DlrmConfig {
  /// The default name of the dynamic batch dim.
  static constexpr const char* kBatchSymbol = "batch";
  std::vector<int64_t> ln_bot;
  std::vector<int64_t> ln_emb;
  std::vector<int64_t> ln_top;
  int64_t batch = 0;  // the batch; with dynamic_batch its typical value (a dim hint)
  int64_t bag = 1;                 // uniform bags only
  DType index_dtype = DType::I32;  // indices and offsets: I32 or I64
  bool jagged = false;             // offsets_k inputs, indices_k [nnz_k] (PyTorch EmbeddingBag)
  BagMode mode = BagMode::Sum;
  Precision precision = Precision::F32;
  SparsePath sparse = SparsePath::Graph;  // Fused / Split need jagged (the op reads offsets)
  // The batch is the dynamic dim `batch_symbol`: one graph serves every batch, the value given at
  // execute() (a CudaRuntime serves them from dim buckets, one plan each).
  bool dynamic_batch = false;
  std::string batch_symbol = kBatchSymbol;  // its name (the DLRM rule keeps an export's, e.g. s0)
  /// Embedding dim d (ln_bot.back()).
  int64_t dim() const;
  /// The batch dim of every input and output: the symbol batch_symbol when dynamic_batch, else
  /// `batch`.
  Expr batch_dim() const;
  /// Number of sparse tables.
  int64_t num_tables() const;
  /// Throws "[dlrm] ..." on inconsistent configs.
  void validate() const;
  /// Infers ln_bot/ln_emb/ln_top from a weights file's tensor names and shapes (clear errors naming
  /// missing/mis-shaped tensors); the index dtype stays I32, the rest at its defaults.
  static DlrmConfig from_weights(const SafetensorsFile& w, int64_t batch, int64_t bag);
  /// The dynamic dim holding len(indices_k) in jagged configs: "nnz_k".
  static std::string nnz_name(int64_t k);
  /// Columns of the top MLP's input: ln_top[0], rounded up to kTopAlign on the fused sparse path
  /// (it writes the padding as zeros), so cuBLASLt reads 16-byte aligned rows.
  int64_t top_input_width() const;
  /// Columns of the bottom MLP's input: ln_bot[0], rounded up to kTopAlign on the fused sparse path
  /// at bf16/int8, where the cast of dense_x writes the zero columns in the same kernel.
  int64_t bottom_input_width() const;
  /// The fused path's column alignment (8 bf16 = 16 bytes; an odd K made cuBLASLt pick unaligned
  /// kernels: 35 us instead of ~5 us for the MLPerf shape's first top layer on the H200).
  static constexpr int64_t kTopAlign = 8;
};

/// The graph input name of a weight declared with zero columns appended ("top_l.0.weight.padded");
/// load_dlrm_weights fills it from the file's unpadded tensor.
std::string padded_weight_name(const std::string& name);

/// The sparse path used until a search times both: a rule, set from GPU measurements by the lead.
/// Today: fused on CUDA (one kernel instead of a gather + reduce per table and the interaction's
/// concat/bmm/slices; split measured slower), the decomposed graph on the CPU (the fused op's CPU
/// run is the same graph).
SparsePath choose_sparse_path(const DlrmConfig& c, bool cuda);

/// DLRM dot interaction: T = [x, ly...] as [B, n, d], Z = T T^T, out = [x, Z[:, i, j] for i > j in
/// row-major order] of shape [B, d + n(n-1)/2].
GraphTensor dot_interaction(const GraphTensor& x, const std::vector<GraphTensor>& ly);

/// PyTorch EmbeddingBag with jagged bags: bag b sums (or averages) table[indices[j]] for j in
/// [offsets[b], offsets[b + 1]) (the last bag ends at len(indices); an empty bag is zeros).
/// offsets [B] (I32/I64); rows [nnz, d] = table[indices] (dequantized); out [B, d] in
/// rows' dtype. Built as mask [B, nnz] @ rows: ordinary ops, O(B * nnz * d) (the reference).
GraphTensor jagged_bag(const GraphTensor& rows, const GraphTensor& offsets, BagMode mode);

/// PyTorch EmbeddingBag with jagged bags (jagged_bag's semantics) as one custom::EmbeddingBag node:
/// table [V, d] (F32/BF16/F16), indices [nnz] and offsets [B] (both I32 or both I64) -> [B, d] in
/// the table's dtype. One gather-and-reduce kernel on CUDA, jagged_bag on the CPU reference.
GraphTensor embedding_bag(const GraphTensor& table, const GraphTensor& indices,
                          const GraphTensor& offsets, BagMode mode);

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

/// The DLRM's inputs and weights as tensors; flat() is the DlrmMega input order: dense_x,
/// indices_0..k-1, (jagged only) offsets_0..k-1, emb_0..k-1, bottom (weight, bias) pairs, top
/// (weight, bias) pairs.
/// Weights are in activation_dtype(precision); Int8 tables are U8 with scale_bias_k beside them.
struct DlrmTensors {
  GraphTensor dense_x;
  std::vector<GraphTensor> indices, tables, bot_w, bot_b, top_w, top_b;
  std::vector<GraphTensor> offsets;     // jagged: offsets_k [B]
  std::vector<GraphTensor> scale_bias;  // Int8: emb_l.k.scale_bias [rows_k, 2] F32
  /// Declares every input of config c in g (weights persisted, PyTorch state_dict names).
  static DlrmTensors declare(Graph& g, const DlrmConfig& c);
  /// Splits a flat input list (DlrmMega order, fp32; jagged indices of any length) back into
  /// fields; checks count, dims and dtypes.
  static DlrmTensors from_flat(const DlrmConfig& c, const std::vector<GraphTensor>& flat);
  /// The DlrmMega input order.
  std::vector<GraphTensor> flat() const;
};

/// A built DLRM: inputs "dense_x" [B, ln_bot[0]] F32, "indices_{k}" ([B * bag], or [nnz_k] when
/// jagged) and, when jagged, "offsets_{k}" [B]; out [B, 1] F32 (an Output).
struct DlrmGraph {
  GraphTensor dense_x;
  std::vector<GraphTensor> indices;
  GraphTensor out;
  std::vector<GraphTensor> offsets;
  DlrmTensors inputs;  // every input, weights included (load_dlrm_weights binds them)
};

/// The DLRM forward pass on given tensors: the body of build_dlrm and of DlrmMega's decomposition.
/// dense_x arrives F32 and the result leaves F32 whatever the precision.
GraphTensor dlrm_forward(const DlrmConfig& c, const DlrmTensors& t);

/// The graph path: the model built from the GraphTensor API (sparse path per c.sparse).
DlrmGraph build_dlrm(Graph& g, const DlrmConfig& c);
/// The same model as one custom_op(DlrmMega) node (the megakernel on CUDA, its decomposition on
/// CPU). fp32 only, uniform or jagged bags, sum or mean: other configs throw with the reason
/// (mega_refusal).
DlrmGraph build_dlrm_mega(Graph& g, const DlrmConfig& c);
/// Why DlrmMega cannot represent c ("" when it can): it takes fp32 and its own sparse path
/// (sparse = Graph) only. The kernel's shape limits are custom::why_unsupported's.
std::string mega_refusal(const DlrmConfig& c);

/// Loads fp32 weights from w into a built DLRM at its precision: as they are (F32, TF32),
/// converted to bf16 (BF16), or with row-wise quantized tables (Int8), all on the host. Checks
/// every name, dtype and shape first ("[dlrm] <file>: ..."); returns the number of tensors bound.
size_t load_dlrm_weights(Runtime& rt, const DlrmGraph& g, const DlrmConfig& c,
                         const SafetensorsFile& w);

// ---- Transformer decoders (Llama 3 architecture; src/core/nn/rope.cpp, attention.cpp, llama*.cpp)
// ----

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

/// A Llama-architecture causal LM's shape, read from a Hugging Face config.json.
struct LlamaConfig {
  int64_t vocab_size = 0, hidden_size = 0, intermediate_size = 0, num_layers = 0;
  int64_t num_heads = 0, num_kv_heads = 0, head_dim = 0, max_position_embeddings = 0;
  double rms_norm_eps = 1e-6;
  RopeConfig rope;
  bool tie_word_embeddings = false;
  /// Parses config.json text; throws "[llama] <where>: ..." for an architecture other than
  /// LlamaForCausalLM, a missing/invalid field, or an unsupported rope type, activation or bias.
  static LlamaConfig from_json(const std::string& text, const std::string& where = "config.json");
  /// Reads and parses a file.
  static LlamaConfig from_file(const std::string& path);
  /// Throws "[llama] ..." on inconsistent sizes.
  void validate() const;
};

/// One checkpoint tensor a Llama needs: its transformers name and shape.
struct WeightSpec {
  std::string name;
  std::vector<int64_t> shape;
};
/// Every weight of c in transformers' names (lm_head.weight only when not tied).
std::vector<WeightSpec> llama_weights(const LlamaConfig& c);

/// A built Llama step graph. Dynamic dim: kSeq = tokens fed this step (the same dims for every
/// decode step). One graph serves prefill and decode.
struct LlamaGraph {
  static constexpr const char* kSeq = "s";
  int64_t capacity = 0;            // KV-cache rows
  GraphTensor ids, pos;            // inputs [s] I32: token ids and their positions
  GraphTensor rope_cos, rope_sin;  // persisted inputs [capacity, head_dim / 2]
  /// Per layer: cache inputs [capacity, KV, head_dim], states (output_into): each execute writes
  /// its rows at pos into them in place; set them (set_zeros) once before the first step.
  std::vector<GraphTensor> k_cache, v_cache;
  GraphTensor logits;      // Output [1, vocab] F32: the last position's logits
  GraphTensor next_token;  // Output [1] I32: their argmax (the first largest; vocab if NaN)
};

/// Builds one Llama step: embeds ids, writes each layer's new K/V rows at pos into its cache
/// (Scatter, in place), attends over the cache (rows after each query's position masked),
/// returns the last row's logits. Weights (in `dt`, F32 or BF16, activations alike) are
/// persisted inputs named as in transformers.
LlamaGraph build_llama(Graph& g, const LlamaConfig& c, int64_t capacity, DType dt = DType::F32);

/// Checks that a checkpoint has every weight of c with its shape and a float dtype; throws
/// "[llama] <path>: missing tensor 'name'" or "... 'name' has shape [a, b], expected [c, d]".
void check_llama_checkpoint(const SafetensorsCheckpoint& ckpt, const LlamaConfig& c);

}  // namespace luminal::nn
