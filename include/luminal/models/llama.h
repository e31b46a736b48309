// Llama-architecture decoders (Llama 3): the Hugging Face config, weight names, the step graph
// (prefill and decode with KV caches) and checkpoint checks.
#pragma once

#include <string>
#include <vector>

#include "luminal/nn.h"

namespace luminal {
class SafetensorsCheckpoint;
}  // namespace luminal

namespace luminal::models {

using nn::RopeConfig;

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

}  // namespace luminal::models
