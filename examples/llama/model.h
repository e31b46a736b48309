// A Llama checkpoint directory loaded onto a runtime, and greedy generation with the KV cache kept
// in the runtime between steps.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "luminal/compile.h"
#include "luminal/graph.h"
#include "luminal/models/llama.h"
#include "luminal/nn.h"
#include "luminal/runtime.h"

namespace llama {

/// Where and how the model runs.
struct ModelOptions {
  std::string dir;                 // a transformers save_pretrained directory
  std::string device = "cpu";      // a device name (luminal/devices.h): cpu, reference, cuda
  std::string precision = "fp32";  // fp32 | bf16
  int64_t capacity = 0;            // KV-cache rows (prompt + new tokens)
  bool profile = false;            // CPU backend: time every step (stats() lists the means)
};

/// One generation's results; times on the host clock.
struct Generation {
  std::vector<int32_t> ids;          // the new tokens
  std::vector<float> prompt_logits;  // logits at the last prompt position
  double ttft_ms = 0;                // prefill + first token
  std::vector<double> step_ms;       // each decode step (token 2 onwards)
  /// Mean of step_ms (0 when there are none).
  double tpot_ms() const;
};

/// A loaded model. Not movable: the graph's tensors point at `graph`.
struct Model {
  luminal::models::LlamaConfig config;
  luminal::Graph graph;
  luminal::models::LlamaGraph tensors;
  std::unique_ptr<luminal::Executable> runtime;
  luminal::DType dtype = luminal::DType::F32;
  std::string device_description;

  Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  /// Greedy generation of n tokens after `prompt` (checked against the vocabulary and capacity).
  Generation generate(const std::vector<int32_t>& prompt, int64_t n);

 private:
  int32_t step(const std::vector<int32_t>& ids, int64_t past, std::vector<float>* logits = nullptr);
};

/// Checks DIR's files (config.json, weights) and parses config.json.
luminal::models::LlamaConfig read_config(const std::string& dir);

/// Reads DIR/config.json, checks the checkpoint against it (names, shapes), builds the graph and
/// its runtime and loads the weights. Throws "[llama] ..." naming the missing file or tensor.
std::unique_ptr<Model> load_model(const ModelOptions& o);

/// Throws "[llama] ..." for an empty prompt, an id outside [0, vocab), or prompt + n beyond
/// max_position_embeddings.
void check_prompt(const luminal::models::LlamaConfig& c, const std::vector<int32_t>& prompt, int64_t n);

}  // namespace llama
