// LlamaConfig from a Hugging Face config.json (transformers 4.x `rope_theta` + `rope_scaling`, or
// 5.x `rope_parameters`), and the list of weights such a model has.
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "luminal/models/llama.h"
#include "luminal/nn.h"

namespace luminal::models {

namespace {

using Json = nlohmann::json;

struct Reader {
  const Json& j;
  const std::string& where;

  [[noreturn]] void fail(const std::string& what) const {
    throw std::invalid_argument(fmt::format("[llama] {}: {}", where, what));
  }
  int64_t integer(const char* key, std::optional<int64_t> fallback = std::nullopt) const {
    if (!j.contains(key) || j[key].is_null()) {
      if (fallback) return *fallback;
      fail(fmt::format("missing '{}'", key));
    }
    if (!j[key].is_number_integer())
      fail(fmt::format("'{}' must be an integer, got {}", key, j[key].dump()));
    return j[key].get<int64_t>();
  }
  double number(const Json& o, const char* key, double fallback) const {
    if (!o.contains(key) || o[key].is_null()) return fallback;
    if (!o[key].is_number()) fail(fmt::format("'{}' must be a number, got {}", key, o[key].dump()));
    return o[key].get<double>();
  }
};

// transformers 5 writes rope_parameters {rope_type, rope_theta, ...}; 4.x writes rope_theta at the
// top and rope_scaling {rope_type | type, ...} (null for plain RoPE).
RopeConfig read_rope(const Reader& r, int64_t max_pos) {
  const Json& j = r.j;
  const Json none = Json::object();
  const Json& p = j.contains("rope_parameters") && j["rope_parameters"].is_object()
                      ? j["rope_parameters"]
                  : j.contains("rope_scaling") && j["rope_scaling"].is_object() ? j["rope_scaling"]
                                                                                : none;
  RopeConfig c;
  c.theta = r.number(p, "rope_theta", r.number(j, "rope_theta", 10000.0));
  std::string type = "default";
  for (const char* key : {"rope_type", "type"}) {
    if (p.contains(key) && p[key].is_string()) {
      type = p[key].get<std::string>();
      break;
    }
  }
  if (r.number(p, "partial_rotary_factor", 1.0) != 1.0)
    r.fail("partial_rotary_factor != 1 is not supported");
  if (type == "default") return c;
  if (type != "llama3")
    r.fail(fmt::format("unsupported rope type '{}' (supported: default, llama3)", type));
  c.type = nn::RopeType::Llama3;
  c.factor = r.number(p, "factor", c.factor);
  c.low_freq_factor = r.number(p, "low_freq_factor", c.low_freq_factor);
  c.high_freq_factor = r.number(p, "high_freq_factor", c.high_freq_factor);
  c.original_max_position_embeddings = static_cast<int64_t>(
      r.number(p, "original_max_position_embeddings", static_cast<double>(max_pos)));
  return c;
}

void refuse_true(const Reader& r, const char* key) {
  if (r.j.contains(key) && r.j[key].is_boolean() && r.j[key].get<bool>())
    r.fail(fmt::format("'{}': true is not supported (Llama has no biases)", key));
}

}  // namespace

LlamaConfig LlamaConfig::from_json(const std::string& text, const std::string& where) {
  Json j;
  try {
    j = Json::parse(text);
  } catch (const Json::parse_error& e) {
    throw std::invalid_argument(fmt::format("[llama] {}: invalid JSON: {}", where, e.what()));
  }
  const Reader r{j, where};
  if (!j.is_object()) r.fail("not a JSON object");
  if (!j.contains("architectures") || !j["architectures"].is_array() || j["architectures"].empty())
    r.fail("no 'architectures' list (expected [\"LlamaForCausalLM\"])");
  for (const Json& a : j["architectures"]) {
    const std::string name = a.is_string() ? a.get<std::string>() : a.dump();
    if (name != "LlamaForCausalLM")
      r.fail(fmt::format("unsupported architecture '{}' (supported: LlamaForCausalLM)", name));
  }
  if (j.contains("hidden_act") && j["hidden_act"] != "silu")
    r.fail(fmt::format("unsupported hidden_act {} (supported: silu)", j["hidden_act"].dump()));
  refuse_true(r, "attention_bias");
  refuse_true(r, "mlp_bias");
  LlamaConfig c;
  c.vocab_size = r.integer("vocab_size");
  c.hidden_size = r.integer("hidden_size");
  c.intermediate_size = r.integer("intermediate_size");
  c.num_layers = r.integer("num_hidden_layers");
  c.num_heads = r.integer("num_attention_heads");
  c.num_kv_heads = r.integer("num_key_value_heads", c.num_heads);
  c.head_dim = r.integer("head_dim", c.num_heads > 0 ? c.hidden_size / c.num_heads : 0);
  c.max_position_embeddings = r.integer("max_position_embeddings");
  c.rms_norm_eps = r.number(j, "rms_norm_eps", 1e-6);
  c.rope = read_rope(r, c.max_position_embeddings);
  if (j.contains("tie_word_embeddings") && j["tie_word_embeddings"].is_boolean())
    c.tie_word_embeddings = j["tie_word_embeddings"].get<bool>();
  try {
    c.validate();
  } catch (const std::invalid_argument& e) {
    r.fail(e.what());
  }
  return c;
}

LlamaConfig LlamaConfig::from_file(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw std::invalid_argument(fmt::format("[llama] cannot open config '{}'", path));
  std::stringstream ss;
  ss << f.rdbuf();
  return from_json(ss.str(), path);
}

void LlamaConfig::validate() const {
  const std::pair<const char*, int64_t> sizes[] = {
      {"vocab_size", vocab_size},
      {"hidden_size", hidden_size},
      {"intermediate_size", intermediate_size},
      {"num_hidden_layers", num_layers},
      {"num_attention_heads", num_heads},
      {"num_key_value_heads", num_kv_heads},
      {"head_dim", head_dim},
      {"max_position_embeddings", max_position_embeddings}};
  for (const auto& [name, v] : sizes)
    if (v <= 0) throw std::invalid_argument(fmt::format("{} must be positive, got {}", name, v));
  if (num_heads % num_kv_heads != 0) {
    throw std::invalid_argument(
        fmt::format("num_attention_heads {} is not a multiple of num_key_value_heads {}", num_heads,
                    num_kv_heads));
  }
  if (head_dim % 2 != 0)
    throw std::invalid_argument(fmt::format("head_dim {} must be even", head_dim));
}

std::vector<WeightSpec> llama_weights(const LlamaConfig& c) {
  const int64_t q = c.num_heads * c.head_dim, kv = c.num_kv_heads * c.head_dim;
  std::vector<WeightSpec> w{{"model.embed_tokens.weight", {c.vocab_size, c.hidden_size}}};
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const std::string p = fmt::format("model.layers.{}.", l);
    w.push_back({p + "input_layernorm.weight", {c.hidden_size}});
    w.push_back({p + "self_attn.q_proj.weight", {q, c.hidden_size}});
    w.push_back({p + "self_attn.k_proj.weight", {kv, c.hidden_size}});
    w.push_back({p + "self_attn.v_proj.weight", {kv, c.hidden_size}});
    w.push_back({p + "self_attn.o_proj.weight", {c.hidden_size, q}});
    w.push_back({p + "post_attention_layernorm.weight", {c.hidden_size}});
    w.push_back({p + "mlp.gate_proj.weight", {c.intermediate_size, c.hidden_size}});
    w.push_back({p + "mlp.up_proj.weight", {c.intermediate_size, c.hidden_size}});
    w.push_back({p + "mlp.down_proj.weight", {c.hidden_size, c.intermediate_size}});
  }
  w.push_back({"model.norm.weight", {c.hidden_size}});
  if (!c.tie_word_embeddings) w.push_back({"lm_head.weight", {c.vocab_size, c.hidden_size}});
  return w;
}

}  // namespace luminal::models
