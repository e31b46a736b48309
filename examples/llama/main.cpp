// llama: greedy generation with a transformers Llama checkpoint (save_pretrained directory) on the
// CPU reference runtime or the CUDA runtime.
//
//   llama --model DIR --prompt-ids 1,2,3 --max-new-tokens N [--device cpu|cuda]
//         [--precision fp32|bf16] [--bench] [--iters K] [--json FILE]
#include <chrono>
#include <cstdio>
#include <exception>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "bench.h"
#include "luminal/environment.h"
#include "model.h"
#include "luminal/models/llama.h"

namespace {

struct Options {
  llama::ModelOptions model;
  std::string prompt_ids;
  int64_t max_new_tokens = 16;
  bool bench = false;
  int iters = 5;
  std::string json;
};

// "1, 2,3" -> {1, 2, 3}; anything else is an error naming the bad item.
std::vector<int32_t> parse_ids(const std::string& s) {
  std::vector<int32_t> ids;
  size_t at = 0;
  while (at <= s.size() && s.find_first_not_of(" ,", at) != std::string::npos) {
    const size_t end = std::min(s.find(',', at), s.size());
    const std::string item = s.substr(at, end - at);
    size_t used = 0;
    long long v = 0;
    try {
      v = std::stoll(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || item.find_first_not_of(" ", used) != std::string::npos || v < INT32_MIN ||
        v > INT32_MAX)
      throw std::invalid_argument(
          fmt::format("[llama] --prompt-ids: '{}' is not a token id", item));
    ids.push_back(static_cast<int32_t>(v));
    at = end + 1;
  }
  return ids;
}

int run(Options& o) {
  const std::vector<int32_t> prompt = parse_ids(o.prompt_ids);
  const luminal::models::LlamaConfig cfg = llama::read_config(o.model.dir);
  llama::check_prompt(cfg, prompt, o.max_new_tokens);
  o.model.capacity = static_cast<int64_t>(prompt.size()) + o.max_new_tokens;
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<llama::Model> m = llama::load_model(o.model);
  const double setup_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "[llama] %lld layers, hidden %lld, heads %lld/%lld, vocab %lld, %s | %s %s | setup %.3f s\n",
      static_cast<long long>(cfg.num_layers), static_cast<long long>(cfg.hidden_size),
      static_cast<long long>(cfg.num_heads), static_cast<long long>(cfg.num_kv_heads),
      static_cast<long long>(cfg.vocab_size),
      cfg.rope.type == luminal::nn::RopeType::Llama3 ? "llama3 rope" : "rope",
      m->device_description.c_str(), o.model.precision.c_str(), setup_s);

  const llama::Generation g = m->generate(prompt, o.max_new_tokens);
  std::printf("generated_ids %s\n", fmt::format("{}", fmt::join(g.ids, ",")).c_str());
  std::printf("ttft %.3f ms | tpot %.3f ms over %zu decode steps\n", g.ttft_ms, g.tpot_ms(),
              g.step_ms.size());

  nlohmann::json j = {
      {"generated_ids", g.ids},
      {"last_prompt_logits", g.prompt_logits},
      {"ttft_ms", g.ttft_ms},
      {"tpot_ms", g.step_ms.empty() ? nlohmann::json(nullptr) : nlohmann::json(g.tpot_ms())},
      {"prompt_len", prompt.size()},
      {"device", m->device_description},
      {"precision", o.model.precision},
      {"setup_s", setup_s},
      {"timing", "host clock; ttft = prefill + first token, tpot = mean decode step"}};
  if (o.bench) j["bench"] = llama::bench(*m, prompt, o.max_new_tokens, o.iters);
  if (o.model.profile)  // per-step means over every execute (prefill and decode steps)
    for (const std::string& step : m->runtime->stats().steps) std::printf("%s\n", step.c_str());
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    if (!f) throw std::runtime_error(fmt::format("[llama] cannot write --json file '{}'", o.json));
    f << j.dump(1) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Greedy Llama generation with luminal-cpp"};
  Options o;
  app.add_option(
         "--model", o.model.dir,
         "transformers save_pretrained directory (config.json + model.safetensors or shards)")
      ->required();
  app.add_option("--prompt-ids", o.prompt_ids, "Prompt token ids, comma-separated (e.g. 1,2,3)")
      ->required();
  app.add_option("--max-new-tokens", o.max_new_tokens,
                 "Tokens to generate (greedy; EOS does not stop it)");
  app.add_option("--device", o.model.device, "cpu, reference, cuda, cuda:N or auto");
  // Checked by load_model, so an unknown name gets the library's error (exit 2).
  app.add_option("--precision", o.model.precision,
                 "fp32 | bf16 (bf16 weights and activations; norms and softmax in f32)");
  app.add_flag("--bench", o.bench,
               "Time --iters more generations after one warm-up (TTFT, TPOT mean/p50)");
  app.add_option("--iters", o.iters, "Timed generations for --bench")->check(CLI::PositiveNumber);
  app.add_flag("--profile", o.model.profile,
               "CPU backend: time every step and print each one's mean (prefill and decode mixed)");
  app.add_option("--json", o.json,
                 "Write generated_ids, last_prompt_logits, ttft_ms, tpot_ms as JSON");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is 0; usage errors share the exit code of bad input
  }
  try {
    luminal::apply_process_environment();
    return run(o);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
