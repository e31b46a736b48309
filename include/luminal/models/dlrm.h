// The DLRM model: facebookresearch/dlrm's DLRM_Net (DLRM-v1, dot interaction) and torchrec's
// DLRM_DCN (DLRM-v2, MLPerf's: DCNv2 low-rank cross layers): its config, weight names, graph
// builders (plain ops, the fused sparse op, the megakernel) and weight loading.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/device.h"
#include "luminal/nn.h"
#include "luminal/precision.h"

namespace luminal {
class Backend;
class SafetensorsFile;
class Runtime;
}  // namespace luminal

namespace luminal::models {

using nn::BagMode;

/// Where a DLRM's sparse path (embedding bags + dot interaction) comes from: ordinary ops in the
/// graph, the fused custom op custom::DlrmSparse (one kernel on CUDA, its decomposition on CPU,
/// after the bottom MLP since it reads x), or Split: the same op as two kernels, the bags and the
/// pairs among them (no x, so the captured graph runs it beside the bottom MLP), then a small one
/// that writes x and the pairs with x (custom::DlrmSparseFinish). For DCNv2 (Cross) Fused is one
/// BagConcat writing x0 and Split a BagConcat of the bags only (beside the bottom MLP) then a concat.
enum class SparsePath { Graph, Fused, Split };

/// "graph" / "fused" / "split".
std::string_view sparse_path_name(SparsePath p);
/// True for the paths built on custom::DlrmSparse (Fused, Split): they read offsets (jagged
/// bags) and write a padded top input.
bool uses_sparse_op(SparsePath p);

/// How the bottom MLP's output meets the pooled bags.
enum class Interaction {
  Dot,    // [x, the pairwise dots of [x, bags...]] (DLRM_Net; the fused kernels are for this)
  Cross,  // DCNv2: x0 = [x, bags...], then cross_layers low-rank cross layers (DLRM_DCN)
};

/// Whose state_dict names the weights (and so the graph's inputs) carry.
enum class WeightNames {
  DlrmNet,   // bot_l.{2i}.*, emb_l.{k}.weight, top_l.{2i}.* (facebookresearch/dlrm)
  TorchRec,  // dense_arch.model._mlp.{i}._linear.*, sparse_arch.embedding_bag_collection.
             // embedding_bags.<table>.weight, inter_arch.crossnet.{V_kernels,W_kernels,bias}.{l},
             // over_arch.model.0._mlp.{i}._linear.*, over_arch.model.1.* (torchrec DLRM_DCN)
};

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
  Interaction interaction = Interaction::Dot;
  int64_t cross_layers = 0, cross_rank = 0;  // Cross: layers and V's rank
  WeightNames names = WeightNames::DlrmNet;
  std::vector<std::string> table_names;  // TorchRec: each table's name (t_cat_k), in table order
  // DLRM_Net ends in a sigmoid; torchrec's models return the logit (the sigmoid is the caller's).
  bool sigmoid = true;
  // Dot: where the pair (i, j) goes (Lower: DLRM_Net's; Upper: torchrec DLRM's triu_indices).
  nn::PairOrder pairs = nn::PairOrder::Lower;
  /// Embedding dim d (ln_bot.back()).
  int64_t dim() const;
  /// The batch dim of every input and output: the symbol batch_symbol when dynamic_batch, else
  /// `batch`.
  Expr batch_dim() const;
  /// Number of sparse tables.
  int64_t num_tables() const;
  /// Throws "[dlrm] ..." on inconsistent configs.
  void validate() const;
  /// Infers the model from a weights file's tensor names and shapes: DLRM_Net's names, or
  /// torchrec's (names TorchRec, no sigmoid): DLRM_DCN (interaction Cross) or DLRM (Dot, pairs
  /// Upper, no inter_arch weights); clear errors naming
  /// missing/mis-shaped tensors; the index dtype stays I32, the rest at its defaults.
  static DlrmConfig from_weights(const SafetensorsFile& w, int64_t batch, int64_t bag);
  /// The dynamic dim holding len(indices_k) in jagged configs: "nnz_k".
  static std::string nnz_name(int64_t k);
  /// Columns of the top MLP's input: ln_top[0], rounded up to custom::kSparseColAlign on the
  /// fused sparse path (the kernel writes the padding as zeros, so GEMMs read aligned rows).
  int64_t top_input_width() const;
  /// Columns of the bottom MLP's input: ln_bot[0], rounded up to custom::kSparseColAlign on the
  /// fused sparse path at bf16/int8, where the cast of dense_x writes the zero columns.
  int64_t bottom_input_width() const;
};

/// Layer i's weight-name prefix (".weight" / ".bias" follow) of the bottom or top MLP under c.names.
std::string dlrm_layer_name(const DlrmConfig& c, bool top, size_t i);
/// Table k's name prefix (".weight" follows) under c.names.
std::string dlrm_table_name(const DlrmConfig& c, size_t k);

/// The graph input name of a weight declared with zero columns appended ("top_l.0.weight.padded");
/// load_dlrm_weights fills it from the file's unpadded tensor.
std::string padded_weight_name(const std::string& name);

/// The sparse path a model is built with where the DLRM rule cannot choose (bf16 and int8 graphs,
/// which it does not match): fused where the target has the DlrmSparse kernel (one kernel instead
/// of a gather + reduce per table and the interaction's concat/bmm/slices; split measured slower
/// on the H200), else the plain graph (the fused op's decomposition is the same graph).
SparsePath choose_sparse_path(const DlrmConfig& c, const Backend& target);

/// The DLRM's inputs and weights as tensors; flat() is the DlrmMega input order: dense_x,
/// indices_0..k-1, (jagged only) offsets_0..k-1, emb_0..k-1, bottom (weight, bias) pairs, top
/// (weight, bias) pairs.
/// Weights are in activation_dtype(precision); Int8 tables are U8 with scale_bias_k beside them.
struct DlrmTensors {
  GraphTensor dense_x;
  std::vector<GraphTensor> indices, tables, bot_w, bot_b, top_w, top_b;
  std::vector<GraphTensor> offsets;     // jagged: offsets_k [B]
  std::vector<GraphTensor> scale_bias;  // Int8: emb_l.k.scale_bias [rows_k, 2] F32
  std::vector<GraphTensor> cross_v, cross_w, cross_b;  // Cross: per layer V (rank, n), W (n, rank), b [n]
  // Each table's bags [B, d] computed elsewhere (sharded lookups on other devices): when set,
  // dlrm_forward reads them instead of tables / indices / offsets (declared without them).
  std::vector<GraphTensor> pooled;
  /// Declares every input of config c in g (weights persisted, PyTorch state_dict names); without
  /// `tables`, only dense_x and the dense weights (the caller sets `pooled`).
  static DlrmTensors declare(Graph& g, const DlrmConfig& c, bool tables = true);
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
/// Why the megakernel cannot run c on this device: mega_refusal, else the kernel's shape limits
/// (a layer wider than it holds, too many tables); "" when it fits.
std::string megakernel_refusal(const DlrmConfig& c, const DeviceCaps& device);

/// Loads fp32 weights from w into a built DLRM at its precision: as they are (F32, TF32),
/// converted to bf16 (BF16), or with row-wise quantized tables (Int8), all on the host. Checks
/// every name, dtype and shape first ("[dlrm] <file>: ..."); returns the number of tensors bound.
size_t load_dlrm_weights(Runtime& rt, const DlrmGraph& g, const DlrmConfig& c,
                         const SafetensorsFile& w);

/// Sorts names by their numeric suffix, then by name (t_cat_2 before t_cat_10): the order of
/// torchrec's tables and of a KeyedJaggedTensor file's feature keys.
void sort_by_numeric_suffix(std::vector<std::string>& names);

/// A DLRM-v2 preset (torchrec names, DCNv2, logit out, jagged bags): "dlrm-v2" (MLPerf's 26 tables
/// x 128, 204,184,588 rows, 3 cross layers of rank 512, top 1024-1024-512-256-1) or "dlrm-v2-small"
/// (export_v2.py's 4 tables x 16); every table capped at max_rows when > 0. Throws for another name.
DlrmConfig dlrm_v2_preset(std::string_view name, int64_t max_rows, int64_t batch);
/// The preset's multi-hot bag sizes per table (MLPerf's 3, 2, 1, ..., 100, 27, ...).
std::vector<int64_t> dlrm_v2_hots(std::string_view name);
/// Bytes of c's weights at its precision (tables and MLP / cross weights and biases).
size_t dlrm_weight_bytes(const DlrmConfig& c);
/// Binds every weight of a built DLRM from a seed (f32 or bf16; Int8 tables: the same f32 values
/// quantized row-wise; torchrec's / nn.Linear's init ranges; a counter-based generator, so the same
/// seed gives the same weights on every device).
/// Returns the number of tensors bound. progress, when set, gets a line after each table of 1 GB or more.
size_t load_synthetic_weights(Runtime& rt, const DlrmGraph& g, const DlrmConfig& c, uint64_t seed,
                              const std::function<void(const std::string&)>& progress = {});

}  // namespace luminal::models
