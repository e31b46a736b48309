// models::LlamaConfig (config.json in transformers 4.x and 5.x layouts, clear refusals), the checkpoint
// check, and the step graph's own consistency: a prompt fed at once gives the same logits as the
// same prompt fed as a prefill plus decode steps through the KV cache. Token-level agreement with
// transformers is tests/python/test_llama_example.py.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "expect_error.h"
#include "luminal/reference.h"
#include "luminal/models/llama.h"
#include "luminal/nn.h"
#include "luminal/safetensors.h"

namespace luminal::models {
namespace {

using test::expect_error;

const char* kV5 = R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 16, "hidden_size": 8,
  "intermediate_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
  "max_position_embeddings": 32, "rms_norm_eps": 1e-5, "hidden_act": "silu", "tie_word_embeddings": true,
  "rope_parameters": {"rope_type": "llama3", "rope_theta": 500000.0, "factor": 32.0,
    "low_freq_factor": 1.0, "high_freq_factor": 4.0, "original_max_position_embeddings": 8}})";

TEST(LlamaConfig, ReadsTransformers5Layout) {
  const LlamaConfig c = LlamaConfig::from_json(kV5);
  EXPECT_EQ(c.vocab_size, 16);
  EXPECT_EQ(c.head_dim, 4);  // hidden / heads when head_dim is absent
  EXPECT_EQ(c.num_kv_heads, 1);
  EXPECT_DOUBLE_EQ(c.rms_norm_eps, 1e-5);
  EXPECT_TRUE(c.tie_word_embeddings);
  EXPECT_EQ(c.rope.type, nn::RopeType::Llama3);
  EXPECT_DOUBLE_EQ(c.rope.theta, 500000.0);
  EXPECT_DOUBLE_EQ(c.rope.factor, 32.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 8);
  EXPECT_EQ(llama_weights(c).size(), 1u + 2 * 9 + 1);  // tied: no lm_head.weight
}

TEST(LlamaConfig, ReadsTransformers4LayoutWithDefaults) {
  const LlamaConfig c = LlamaConfig::from_json(R"({"architectures": ["LlamaForCausalLM"],
    "vocab_size": 16, "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
    "num_attention_heads": 2, "max_position_embeddings": 32, "rope_theta": 1000.0,
    "rope_scaling": {"type": "llama3", "factor": 4.0}})");
  EXPECT_EQ(c.num_kv_heads, 2);  // defaults to the query heads
  EXPECT_DOUBLE_EQ(c.rope.theta, 1000.0);
  EXPECT_EQ(c.rope.type, nn::RopeType::Llama3);
  EXPECT_DOUBLE_EQ(c.rope.factor, 4.0);
  EXPECT_EQ(c.rope.original_max_position_embeddings, 32);  // falls back to max_position_embeddings
  EXPECT_FALSE(c.tie_word_embeddings);
  EXPECT_EQ(llama_weights(c).back().name, "lm_head.weight");
}

TEST(LlamaConfig, RefusalsNameTheProblem) {
  auto with = [](const std::string& from, const std::string& to) {
    std::string s = kV5;
    s.replace(s.find(from), from.size(), to);
    return s;
  };
  expect_error(
      [&] { LlamaConfig::from_json(with("LlamaForCausalLM", "GPT2LMHeadModel"), "x/config.json"); },
      {"[llama] x/config.json", "unsupported architecture 'GPT2LMHeadModel'"});
  expect_error([&] { LlamaConfig::from_json(with("\"llama3\"", "\"dynamic\"")); },
               {"unsupported rope type 'dynamic'"});
  expect_error([&] { LlamaConfig::from_json(with("\"vocab_size\": 16,", "")); },
               {"missing 'vocab_size'"});
  expect_error(
      [&] {
        LlamaConfig::from_json(with("\"num_key_value_heads\": 1", "\"num_key_value_heads\": 3"));
      },
      {"not a multiple of num_key_value_heads 3"});
  expect_error([&] { LlamaConfig::from_json(with("\"silu\"", "\"gelu\"")); },
               {"unsupported hidden_act \"gelu\""});
  expect_error([&] { LlamaConfig::from_json("{"); }, {"invalid JSON"});
}

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() /
          fmt::format("luminal_llama_{}_{}", getpid(), name))
      .string();
}

// Every weight of c, random N(0, 0.3) (norm weights around 1), as safetensors tensors.
std::vector<TensorData> random_weights(const LlamaConfig& c, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> nd(0.0f, 0.3f);
  std::vector<TensorData> out;
  for (const WeightSpec& w : llama_weights(c)) {
    std::vector<float> v(static_cast<size_t>(
        std::accumulate(w.shape.begin(), w.shape.end(), int64_t{1}, std::multiplies<>())));
    const bool norm = w.shape.size() == 1;
    for (float& x : v) x = norm ? 1.0f + nd(rng) : nd(rng);
    out.push_back(make_tensor_data(w.name, w.shape, std::span<const float>(v)));
  }
  return out;
}

TEST(LlamaCheckpoint, MissingOrMisShapedTensorsAreNamed) {
  const LlamaConfig c = LlamaConfig::from_json(kV5);
  std::vector<TensorData> w = random_weights(c, 1);
  const std::string path = temp_path("ckpt.safetensors");
  write_safetensors(path, w);
  check_llama_checkpoint(SafetensorsCheckpoint::open(path), c);  // complete: no error
  w[3].shape = {4, 8};  // model.layers.0.self_attn.k_proj.weight is [4, 8]; make it something else
  w[3].name = "model.layers.0.self_attn.k_proj.weight";
  w[2].shape = {2, 32};
  write_safetensors(path, w);
  expect_error([&] { check_llama_checkpoint(SafetensorsCheckpoint::open(path), c); },
               {"'model.layers.0.self_attn.q_proj.weight' has shape [2, 32], expected [8, 8]"});
  w.erase(w.begin() + 2);
  write_safetensors(path, w);
  expect_error([&] { check_llama_checkpoint(SafetensorsCheckpoint::open(path), c); },
               {"missing tensor 'model.layers.0.self_attn.q_proj.weight'"});
  std::filesystem::remove(path);
}

// Runs ids at positions [past, past + n); returns the logits. `data` collects each cache buffer's
// data pointer (the CPU runtime's Buffer holds a vector of bytes), moved out and back in.
std::vector<float> step(ReferenceRuntime& rt, const LlamaGraph& m, std::vector<int32_t> ids, int64_t past,
                        std::vector<const void*>* data = nullptr) {
  std::vector<int32_t> pos(ids.size());
  std::iota(pos.begin(), pos.end(), static_cast<int32_t>(past));
  rt.set_data(m.ids, std::span<const int32_t>(ids));
  rt.set_data(m.pos, std::span<const int32_t>(pos));
  rt.execute({{LlamaGraph::kSeq, static_cast<int64_t>(ids.size())}});
  auto note = [&](const GraphTensor& cache) {
    Buffer b = rt.remove_buffer(cache);
    data->push_back(static_cast<const std::vector<std::byte>*>(b.impl.get())->data());
    rt.set_buffer(cache, std::move(b));
  };
  for (size_t l = 0; data && l < m.k_cache.size(); ++l) {
    note(m.k_cache[l]);
    note(m.v_cache[l]);
  }
  std::vector<float> logits = rt.get_f32(m.logits);
  const auto best = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
  EXPECT_EQ(rt.get_i32(m.next_token), std::vector<int32_t>{best}) << "the graph's argmax";
  return logits;
}

// Also: the caches keep their buffers from step to step (written in place, never copied).
TEST(LlamaGraph, PrefillPlusDecodeStepsEqualsOnePrefill) {
  const LlamaConfig c = LlamaConfig::from_json(kV5);
  const std::string path = temp_path("w.safetensors");
  write_safetensors(path, random_weights(c, 7));
  const std::vector<int32_t> prompt{3, 1, 4, 1, 5};
  auto run = [&](const std::vector<size_t>& chunks) {
    Graph g;
    const LlamaGraph m = build_llama(g, c, 8);
    ReferenceRuntime rt(g);
    EXPECT_EQ(load_safetensors(rt, path), llama_weights(c).size());
    const nn::RopeTables t = nn::rope_tables(nn::rope_inv_freq(c.rope, c.head_dim), 8);
    rt.set_data(m.rope_cos, std::span<const float>(t.cos));
    rt.set_data(m.rope_sin, std::span<const float>(t.sin));
    for (size_t l = 0; l < m.k_cache.size(); ++l) {
      rt.set_zeros(m.k_cache[l], 8 * 1 * 4 * sizeof(float));
      rt.set_zeros(m.v_cache[l], 8 * 1 * 4 * sizeof(float));
    }
    std::vector<float> logits;
    std::vector<const void*> first, now;
    size_t at = 0;
    for (size_t n : chunks) {
      now.clear();
      logits = step(rt, m, {prompt.begin() + at, prompt.begin() + at + n}, static_cast<int64_t>(at),
                    &now);
      if (first.empty()) first = now;
      EXPECT_EQ(now, first) << "a KV cache was copied instead of written in place";
      at += n;
    }
    return logits;
  };
  const std::vector<float> whole = run({5}), pieces = run({3, 1, 1}), ragged = run({2, 2, 1});
  ASSERT_EQ(whole.size(), 16u);
  for (size_t i = 0; i < whole.size(); ++i) {
    EXPECT_NEAR(pieces[i], whole[i], 1e-5) << i;
    EXPECT_NEAR(ragged[i], whole[i], 1e-5) << i;
  }
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace luminal::models
