// The attention rule on a tiny Llama (2 layers, 4 query heads over 2 kv heads, d 64): one match per
// layer; "fused" (custom::CausalAttention) gives the original's logits and caches on the reference
// runtime for a prefill and a decode step with masked cache rows, f32 and bf16; refusals.
#include <gtest/gtest.h>

#include "luminal/custom_op.h"

#include <unistd.h>
#include <cstdlib>
#include <filesystem>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "compiler/rules/rules.h"
#include "luminal/reference.h"
#include "luminal/models/llama.h"
#include "luminal/nn.h"
#include "luminal/safetensors.h"
#include "luminal/compile.h"
#include "test_caps.h"

namespace luminal {
namespace {

namespace rules = compiler::rules;

const char* kConfig =
    R"({"architectures": ["LlamaForCausalLM"], "vocab_size": 16, "hidden_size": 256,
  "intermediate_size": 32, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
  "max_position_embeddings": 32, "rms_norm_eps": 1e-5, "hidden_act": "silu", "tie_word_embeddings": true,
  "rope_theta": 10000.0})";
constexpr int64_t kCap = 12;

std::string weights_file(const models::LlamaConfig& c) {
  const std::string path = (std::filesystem::temp_directory_path() /
                            fmt::format("luminal_attn_rule_{}.safetensors", getpid()))
                               .string();
  std::mt19937 rng(5);
  std::normal_distribution<float> nd(0.0f, 0.2f);
  std::vector<TensorData> out;
  for (const models::WeightSpec& w : models::llama_weights(c)) {
    std::vector<float> v(
        size_t(std::accumulate(w.shape.begin(), w.shape.end(), int64_t{1}, std::multiplies<>())));
    for (float& x : v) x = w.shape.size() == 1 ? 1.0f + nd(rng) : nd(rng);
    out.push_back(make_tensor_data(w.name, w.shape, std::span<const float>(v)));
  }
  write_safetensors(path, out);
  return path;
}

// A context whose backend has the fused attention kernel (no GPU needed to match).
rules::RuleContext cuda_ctx(const Graph& g) {
  return {g, nullptr, test::kernel_claiming_backend().get()};
}

// Runs a prefill of 3 tokens then one decode step on rt (a runtime of m's graph); returns both
// steps' logits.
std::vector<float> run(Runtime& rt, const models::LlamaGraph& m, const models::LlamaConfig& c,
                       const std::string& weights, DType dt) {
  LoadOptions lo;
  lo.convert_floats = true;  // the f32 file into a bf16 graph
  load_safetensors(rt, weights, lo);
  const nn::RopeTables t = nn::rope_tables(nn::rope_inv_freq(c.rope, c.head_dim), kCap);
  auto put = [&](const GraphTensor& x, const std::vector<float>& v) {
    if (dt == DType::F32) return rt.set_data(x, std::span<const float>(v));
    std::vector<bf16> h(v.size());
    for (size_t i = 0; i < v.size(); ++i) h[i] = bf16(v[i]);
    rt.set_data(x, std::span<const bf16>(h));
  };
  put(m.rope_cos, t.cos);
  put(m.rope_sin, t.sin);
  // Garbage in the unfilled cache rows: the mask must hide it (weight exactly 0).
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-3.f, 3.f);
  for (size_t l = 0; l < m.k_cache.size(); ++l)
    for (const GraphTensor& cache : {m.k_cache[l], m.v_cache[l]}) {
      std::vector<float> v(size_t(kCap * c.num_kv_heads * c.head_dim));
      for (float& x : v) x = u(rng);
      put(cache, v);
    }
  std::vector<float> out;
  auto step = [&](std::vector<int32_t> ids, int32_t past) {
    std::vector<int32_t> pos(ids.size());
    std::iota(pos.begin(), pos.end(), past);
    rt.set_data(m.ids, std::span<const int32_t>(ids));
    rt.set_data(m.pos, std::span<const int32_t>(pos));
    rt.execute({{models::LlamaGraph::kSeq, int64_t(ids.size())}});
    for (float x : rt.get_f32(m.logits)) out.push_back(x);
  };
  step({3, 1, 4}, 0);
  step({5}, 3);
  return out;
}

models::LlamaGraph moved(const rules::Rebuilt& r, models::LlamaGraph m) {
  m.ids = rules::moved(r, m.ids), m.pos = rules::moved(r, m.pos),
  m.logits = rules::moved(r, m.logits);
  m.rope_cos = rules::moved(r, m.rope_cos), m.rope_sin = rules::moved(r, m.rope_sin);
  for (auto* caches : {&m.k_cache, &m.v_cache})
    for (GraphTensor& t : *caches) t = rules::moved(r, t);
  return m;
}


// The attention rule's matches only (the rms_norm rule matches the same graphs).
std::vector<rules::RuleMatch> attention_matches(const rules::RuleContext& ctx) {
  std::vector<rules::RuleMatch> out;
  for (rules::RuleMatch& m : rules::find_matches(ctx))
    if (m.rule == "attention") out.push_back(std::move(m));
  return out;
}

TEST(AttentionRule, FusedEqualsOriginalOnTinyLlama) {
  const models::LlamaConfig c = models::LlamaConfig::from_json(kConfig);
  ASSERT_EQ(c.head_dim, 64);
  const std::string weights = weights_file(c);
  for (DType dt : {DType::F32, DType::BF16}) {
    SCOPED_TRACE(dtype_name(dt));
    Graph g;
    const models::LlamaGraph m = models::build_llama(g, c, kCap, dt);
    const std::vector<rules::RuleMatch> matches = attention_matches(cuda_ctx(g));
    ASSERT_EQ(matches.size(), 2u);  // one per layer
    for (const rules::RuleMatch& r : matches) {
      EXPECT_EQ(r.rule, "attention");
      EXPECT_EQ(rules::auto_choice(r).name, "fused");
    }
    const rules::Applied a = rules::apply(g, matches, "fused");
    ASSERT_TRUE(a.rebuilt);
    size_t customs = 0;
    for (NodeId id = 0; id < a.rebuilt->graph->size(); ++id)
      customs += a.rebuilt->graph->node(id).kind == OpKind::Custom;
    EXPECT_EQ(customs, 2u);
    ReferenceRuntime plain(g), fused(*a.rebuilt->graph);
    const std::vector<float> want = run(plain, m, c, weights, dt);
    const std::vector<float> got = run(fused, moved(*a.rebuilt, m), c, weights, dt);
    ASSERT_EQ(got.size(), want.size());
    const double tol = dt == DType::F32 ? 1e-4 : 5e-2;
    double spread = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_NEAR(got[i], want[i], tol * (1 + std::abs(want[i]))) << "logit " << i;
      spread += std::abs(want[i] - want[0]);
    }
    EXPECT_GT(spread, 1e-3);  // not a constant result
  }
  std::filesystem::remove(weights);
}

TEST(AttentionRule, RefusesOffCudaAndLookAlikes) {
  const models::LlamaConfig c = models::LlamaConfig::from_json(kConfig);
  Graph g;
  models::build_llama(g, c, kCap, DType::F32);
  const std::vector<rules::RuleMatch> cpu = attention_matches({g, nullptr, reference_backend().get()});
  ASSERT_EQ(cpu.size(), 2u);
  EXPECT_EQ(rules::auto_choice(cpu[0]).name, "decomposed");
  EXPECT_NE(cpu[0].alternatives[0].refusal.find("no attention kernel on the reference backend"),
            std::string::npos);
  EXPECT_FALSE(rules::apply(g, cpu, "auto").rebuilt);
  // A look-alike: no causal mask (plain softmax attention) must not match.
  Graph h;
  const GraphTensor q = h.named_tensor("q", {2, 4, 64}), k = h.named_tensor("k", {5, 2, 64});
  const GraphTensor pos = h.named_tensor("pos", {2}, DType::I32);
  const GraphTensor v = h.named_tensor("v", {5, 2, 64});
  nn::causal_attention(q, k, v, pos, 0.125).contiguous().output();
  EXPECT_EQ(attention_matches(cuda_ctx(h)).size(), 1u);
  Graph n;
  const GraphTensor q2 = n.named_tensor("q", {2, 2, 64}), k2 = n.named_tensor("k", {5, 2, 64});
  const GraphTensor v2 = n.named_tensor("v", {5, 2, 64});
  const GraphTensor s = q2.permute({1, 0, 2}).matmul(k2.permute({1, 2, 0})) * 0.125;
  s.softmax(-1).matmul(v2.permute({1, 0, 2})).permute({1, 0, 2}).contiguous().output();
  EXPECT_TRUE(attention_matches(cuda_ctx(n)).empty());
}

// A graph with states (Llama's KV caches) is not searched: compile() runs its default candidate,
// the rules' first available alternatives (the fused attention where the backend has the kernel),
// records it in the rule report, and the states still write into the (remapped) caches:
// prefill + decode equal the plain graph's on the reference. alternative = none keeps the graph.
TEST(AttentionRule, StateGraphsTakeTheDefaultChoice) {
  const models::LlamaConfig c = models::LlamaConfig::from_json(kConfig);
  const std::string weights = weights_file(c);
  Graph g;
  const models::LlamaGraph m = models::build_llama(g, c, kCap, DType::BF16);
  Executable fused(g, test::kernel_claiming_backend());
  size_t attention_lines = 0;  // the report also lists the other rules' matches (rms_norm)
  for (const std::string& line : fused.rule_report()) {
    if (!line.starts_with("attention:")) continue;
    ++attention_lines;
    EXPECT_NE(line.find("-> fused"), std::string::npos) << line;
  }
  EXPECT_EQ(attention_lines, 2u);
  ReferenceRuntime plain(g);
  const std::vector<float> want = run(plain, m, c, weights, DType::BF16);
  const std::vector<float> got = run(fused, m, c, weights, DType::BF16);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], 5e-2 * (1 + std::abs(want[i]))) << "logit " << i;
  EXPECT_FALSE(fused.search_report().ran) << "a graph with states is not searched";
  CompileOptions none;
  none.alternative = "none";
  const Executable kept(g, test::kernel_claiming_backend(), none);
  for (const std::string& line : kept.rule_report())
    EXPECT_NE(line.find("-> decomposed"), std::string::npos) << line;
  // On the reference the attention stays decomposed (no kernel of its own there).
  const Executable ref(g, reference_backend());
  for (const std::string& line : ref.rule_report())
    if (line.starts_with("attention:")) EXPECT_NE(line.find("-> decomposed"), std::string::npos) << line;
  std::filesystem::remove(weights);
}

}  // namespace
}  // namespace luminal
