// Loading a transformers Llama directory and running greedy generation on it.
//
// One graph serves prefill and decode: the sequence length s is a symbol bound per execute (decode
// steps all run at s = 1, so the CUDA runtime replays one captured graph). Each layer's KV cache
// is a state input (output_into): the step's Scatter writes its new rows into it in place.
#include "model.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "luminal/cpu.h"
#include "luminal/devices.h"
#include "luminal/environment.h"
#include "luminal/precision.h"
#include "luminal/safetensors.h"
#include "luminal/models/llama.h"

namespace llama {

namespace fs = std::filesystem;
using luminal::DType;

double Generation::tpot_ms() const {
  if (step_ms.empty()) return 0;
  return std::accumulate(step_ms.begin(), step_ms.end(), 0.0) / static_cast<double>(step_ms.size());
}

void check_prompt(const luminal::models::LlamaConfig& c, const std::vector<int32_t>& prompt,
                  int64_t n) {
  if (prompt.empty())
    throw std::invalid_argument("[llama] --prompt-ids is empty: give at least one token id");
  if (n < 0)
    throw std::invalid_argument(fmt::format("[llama] --max-new-tokens must be >= 0, got {}", n));
  for (size_t i = 0; i < prompt.size(); ++i) {
    if (prompt[i] < 0 || prompt[i] >= c.vocab_size) {
      throw std::invalid_argument(
          fmt::format("[llama] prompt id {} at position {} is outside the vocabulary [0, {})",
                      prompt[i], i, c.vocab_size));
    }
  }
  const auto total = static_cast<int64_t>(prompt.size()) + n;
  if (total > c.max_position_embeddings) {
    throw std::invalid_argument(fmt::format(
        "[llama] prompt of {} tokens + {} new tokens = {} exceeds max_position_embeddings {}",
        prompt.size(), n, total, c.max_position_embeddings));
  }
}

namespace {

// DIR must hold config.json and model.safetensors or model.safetensors.index.json.
void check_dir(const std::string& dir) {
  if (dir.empty()) throw std::invalid_argument("[llama] --model is required");
  if (!fs::is_directory(dir))
    throw std::invalid_argument(fmt::format("[llama] model directory '{}' does not exist", dir));
  if (!fs::is_regular_file(fs::path(dir) / "config.json"))
    throw std::invalid_argument(fmt::format("[llama] {}: no config.json", dir));
  if (!fs::is_regular_file(fs::path(dir) / "model.safetensors") &&
      !fs::is_regular_file(fs::path(dir) / "model.safetensors.index.json")) {
    throw std::invalid_argument(fmt::format(
        "[llama] {}: no weights (model.safetensors or model.safetensors.index.json)", dir));
  }
}

// The step graph compiled for the device: the documented environment's options (LUMINAL_RULES,
// LUMINAL_GEMV_*, ...) apply. One plan serves decode (s = 1) and prefill (s = prompt length):
// hinting s = 16 puts every projection on cuBLASLt (a generated reduction is far slower at
// prefill; at s = 1 the GEMV kernel streams the weights). The graph updates its KV-cache inputs,
// so it is not searched: it runs its default plan (the rules' first available alternatives).
std::unique_ptr<luminal::Executable> make_runtime(const luminal::Graph& g, const ModelOptions& o,
                                                  std::string& description) {
  luminal::cuda::CudaOptions cuda;
  luminal::apply_environment(cuda);
  luminal::cpu::CpuOptions cpu;
  cpu.profile = o.profile;
  const luminal::Target target = luminal::backend_for(o.device, cuda, cpu);
  description = target->description();
  luminal::CompileOptions opts;
  luminal::apply_environment(opts);
  opts.dim_hints = {{luminal::models::LlamaGraph::kSeq, 16}};
  return luminal::compile(g, target, opts);
}

template <class T>
void set_table(luminal::Runtime& rt, const luminal::GraphTensor& t, const std::vector<float>& v) {
  if constexpr (std::is_same_v<T, float>) {
    rt.set_data(t, std::span<const float>(v));
  } else {
    std::vector<T> conv(v.begin(), v.end());
    rt.set_data(t, std::span<const T>(conv));
  }
}

}  // namespace

luminal::models::LlamaConfig read_config(const std::string& dir) {
  check_dir(dir);
  return luminal::models::LlamaConfig::from_file((fs::path(dir) / "config.json").string());
}

std::unique_ptr<Model> load_model(const ModelOptions& o) {
  auto m = std::make_unique<Model>();
  m->config = read_config(o.dir);
  const luminal::Precision p = luminal::parse_precision(o.precision);
  if (p != luminal::Precision::F32 && p != luminal::Precision::BF16)
    throw std::invalid_argument(
        fmt::format("[llama] --precision must be fp32 or bf16, got '{}'", o.precision));
  m->dtype = luminal::activation_dtype(p);
  {
    // Names and shapes first, so a bad checkpoint is refused before the graph exists.
    const auto ckpt = luminal::SafetensorsCheckpoint::open(o.dir);
    luminal::models::check_llama_checkpoint(ckpt, m->config);
  }
  m->tensors = luminal::models::build_llama(m->graph, m->config, o.capacity, m->dtype);
  m->runtime = make_runtime(m->graph, o, m->device_description);
  luminal::LoadOptions lo;
  lo.convert_floats = true;  // fp32 or bf16 files serve either precision
  lo.progress = true;
  load_safetensors(*m->runtime, o.dir, lo);

  const luminal::models::LlamaConfig& c = m->config;
  const luminal::nn::RopeTables rope =
      luminal::nn::rope_tables(luminal::nn::rope_inv_freq(c.rope, c.head_dim), o.capacity);
  if (m->dtype == DType::F32) {
    set_table<float>(*m->runtime, m->tensors.rope_cos, rope.cos);
    set_table<float>(*m->runtime, m->tensors.rope_sin, rope.sin);
  } else {
    set_table<luminal::bf16>(*m->runtime, m->tensors.rope_cos, rope.cos);
    set_table<luminal::bf16>(*m->runtime, m->tensors.rope_sin, rope.sin);
  }
  const size_t cache_bytes =
      static_cast<size_t>(o.capacity * c.num_kv_heads * c.head_dim) * luminal::dtype_size(m->dtype);
  for (size_t l = 0; l < m->tensors.k_cache.size(); ++l) {
    m->runtime->set_zeros(m->tensors.k_cache[l], cache_bytes);
    m->runtime->set_zeros(m->tensors.v_cache[l], cache_bytes);
  }
  return m;
}

// Feeds ids at positions [past, past + ids.size()) and returns the greedy next token (the argmax
// is in the graph: only its id comes back); `logits`, when given, gets the last position's logits.
int32_t Model::step(const std::vector<int32_t>& ids, int64_t past, std::vector<float>* logits) {
  luminal::Runtime& rt = *runtime;
  std::vector<int32_t> pos(ids.size());
  std::iota(pos.begin(), pos.end(), static_cast<int32_t>(past));
  rt.set_data(tensors.ids, std::span<const int32_t>(ids));
  rt.set_data(tensors.pos, std::span<const int32_t>(pos));
  const auto s = static_cast<int64_t>(ids.size());
  rt.execute({{luminal::models::LlamaGraph::kSeq, s}});  // the caches are updated in place
  if (logits != nullptr) *logits = rt.get_f32(tensors.logits);
  const int32_t next = rt.get_i32(tensors.next_token).at(0);
  if (next < 0 || next >= config.vocab_size)
    throw std::runtime_error(
        fmt::format("[llama] the logits at position {} are not finite (no argmax)", past + s - 1));
  return next;
}

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

Generation Model::generate(const std::vector<int32_t>& prompt, int64_t n) {
  check_prompt(config, prompt, n);
  if (static_cast<int64_t>(prompt.size()) + n > tensors.capacity) {
    throw std::invalid_argument(
        fmt::format("[llama] prompt {} + {} new tokens exceeds the KV-cache capacity {}",
                    prompt.size(), n, tensors.capacity));
  }
  Generation out;
  auto t0 = std::chrono::steady_clock::now();
  const int32_t first = step(prompt, 0, &out.prompt_logits);
  if (n == 0) {
    out.ttft_ms = ms_since(t0);
    return out;
  }
  out.ids.push_back(first);
  out.ttft_ms = ms_since(t0);
  auto past = static_cast<int64_t>(prompt.size());
  // The last new token is never fed back: n tokens take n - 1 decode steps.
  for (int64_t i = 1; i < n; ++i, ++past) {
    t0 = std::chrono::steady_clock::now();
    out.ids.push_back(step({out.ids.back()}, past));
    out.step_ms.push_back(ms_since(t0));
  }
  return out;
}

}  // namespace llama
