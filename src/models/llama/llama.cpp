// The Llama step graph (embedding, decoder layers with a scatter-written KV cache, last-row LM
// head) and the checkpoint check that runs before any weight is loaded.
#include <cmath>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "luminal/models/llama.h"
#include "luminal/nn.h"
#include "luminal/safetensors.h"

namespace luminal::models {

namespace {

// The weights of one decoder layer, as persisted inputs named like transformers'.
struct LayerWeights {
  GraphTensor in_norm, post_norm;
  nn::Linear q, k, v, o, gate, up, down;
  LayerWeights(Graph& g, const LlamaConfig& c, int64_t l, DType dt)
      : in_norm(g.named_tensor(fmt::format("model.layers.{}.input_layernorm.weight", l),
                               {c.hidden_size}, dt)
                    .persist()),
        post_norm(g.named_tensor(fmt::format("model.layers.{}.post_attention_layernorm.weight", l),
                                 {c.hidden_size}, dt)
                      .persist()),
        q(g, name(l, "self_attn.q_proj"), c.hidden_size, c.num_heads * c.head_dim, false, dt),
        k(g, name(l, "self_attn.k_proj"), c.hidden_size, c.num_kv_heads * c.head_dim, false, dt),
        v(g, name(l, "self_attn.v_proj"), c.hidden_size, c.num_kv_heads * c.head_dim, false, dt),
        o(g, name(l, "self_attn.o_proj"), c.num_heads * c.head_dim, c.hidden_size, false, dt),
        gate(g, name(l, "mlp.gate_proj"), c.hidden_size, c.intermediate_size, false, dt),
        up(g, name(l, "mlp.up_proj"), c.hidden_size, c.intermediate_size, false, dt),
        down(g, name(l, "mlp.down_proj"), c.intermediate_size, c.hidden_size, false, dt) {}
  static std::string name(int64_t l, const char* what) {
    return fmt::format("model.layers.{}.{}", l, what);
  }
};

// max over axis 1 of x [1, V] in two reductions, [1, R, V / R] -> [1, R] -> [1], with R the
// divisor of V nearest sqrt(V): one reduction over 128256 logits runs in a single block (94 us on
// the H200 under ncu), R rows of one run in parallel.
GraphTensor wide_max(const GraphTensor& x) {
  const int64_t v = *x.dims()[1].as_const();
  int64_t rows = 1;
  for (int64_t r = 1; r * r <= v; ++r)
    if (v % r == 0) rows = r;
  return rows == 1 ? x.max(1) : x.split_dims(1, v / rows).max(2).max(1);
}

}  // namespace

LlamaGraph build_llama(Graph& g, const LlamaConfig& c, int64_t capacity, DType dt) {
  c.validate();
  if (dt != DType::F32 && dt != DType::BF16)
    throw std::invalid_argument(
        fmt::format("[llama] dtype must be f32 or bf16, got {}", dtype_name(dt)));
  if (capacity <= 0)
    throw std::invalid_argument(
        fmt::format("[llama] KV-cache capacity must be positive, got {}", capacity));
  LlamaGraph m;
  m.capacity = capacity;
  const Expr s = Expr::sym(LlamaGraph::kSeq);
  const int64_t hd = c.head_dim;
  m.ids = g.named_tensor("input_ids", {s}, DType::I32);
  m.pos = g.named_tensor("positions", {s}, DType::I32);
  m.rope_cos = g.named_tensor("rope.cos", {capacity, hd / 2}, dt).persist();
  m.rope_sin = g.named_tensor("rope.sin", {capacity, hd / 2}, dt).persist();
  const GraphTensor embed =
      g.named_tensor("model.embed_tokens.weight", {c.vocab_size, c.hidden_size}, dt).persist();
  const GraphTensor cos = m.rope_cos.gather(m.pos), sin = m.rope_sin.gather(m.pos);  // [s, hd/2]
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));

  GraphTensor x = embed.gather(m.ids);  // [s, hidden]
  std::vector<GraphTensor> k_new, v_new;
  for (int64_t l = 0; l < c.num_layers; ++l) {
    const LayerWeights w(g, c, l, dt);
    m.k_cache.push_back(
        g.named_tensor(fmt::format("cache.{}.k", l), {capacity, c.num_kv_heads, hd}, dt));
    m.v_cache.push_back(
        g.named_tensor(fmt::format("cache.{}.v", l), {capacity, c.num_kv_heads, hd}, dt));
    const GraphTensor h = nn::rms_norm(x, w.in_norm, c.rms_norm_eps);
    const GraphTensor q = nn::apply_rope(w.q(h).split_dims(1, hd), cos, sin);  // [s, H, hd]
    const GraphTensor k = nn::apply_rope(w.k(h).split_dims(1, hd), cos, sin);  // [s, KV, hd]
    const GraphTensor v = w.v(h).split_dims(1, hd);
    // The step's rows land at their positions; attention reads the whole cache, rows after each
    // query's position masked (weight exactly 0), so a decode step has the same dims every time
    // and the CUDA runtime replays its captured graph. The cost: capacity rows read per step.
    k_new.push_back(nn::scatter_rows(m.k_cache.back(), m.pos, k));
    v_new.push_back(nn::scatter_rows(m.v_cache.back(), m.pos, v));
    const GraphTensor a = nn::causal_attention(q, k_new.back(), v_new.back(), m.pos, scale);
    x = x + w.o(a.reshape({s, c.num_heads * hd}));
    const GraphTensor h2 = nn::rms_norm(x, w.post_norm, c.rms_norm_eps);
    x = x + w.down(w.gate(h2).silu() * w.up(h2));
  }
  const GraphTensor lm_head =
      c.tie_word_embeddings
          ? embed
          : g.named_tensor("lm_head.weight", {c.vocab_size, c.hidden_size}, dt).persist();
  const GraphTensor last =
      nn::rms_norm(x.slice(0, s - 1, s),
               g.named_tensor("model.norm.weight", {c.hidden_size}, dt).persist(), c.rms_norm_eps);
  GraphTensor logits = last.matmul(lm_head.transpose(0, 1));  // [1, vocab]
  if (logits.dtype != DType::F32) logits = logits.cast(DType::F32);
  m.logits = logits;
  m.logits.output();
  // Greedy decoding's argmax on the device, so a decode step reads back one id, not the vocab's
  // logits: max over j of (V - j) where logit j is the largest = V - (its first index), which is
  // torch.argmax's tie rule. A NaN logit matches nothing: the id is then V, out of the vocab.
  const int64_t vocab = c.vocab_size;
  const GraphTensor top = wide_max(logits).expand_dim(1, vocab);  // [1, V]
  const GraphTensor from_end =
      (g.arange(vocab, DType::F32) * -1.0 + double(vocab)).expand_dim(0, 1);
  const GraphTensor first = wide_max(where(logits.eq(top), from_end, g.constant(0.0)));  // [1]
  m.next_token = (-first + double(vocab)).cast(DType::I32);
  m.next_token.output();
  // The caches' next values last: each is then its scatter's final reader, so the runtimes update
  // the cache in place (the CPU runtime hands buffers over; CUDA scatters into the input).
  for (size_t l = 0; l < k_new.size(); ++l) {
    k_new[l].output_into(m.k_cache[l]);
    v_new[l].output_into(m.v_cache[l]);
  }
  return m;
}

void check_llama_checkpoint(const SafetensorsCheckpoint& ckpt, const LlamaConfig& c) {
  std::map<std::string, const SafeTensor*, std::less<>> by_name;
  for (const SafeTensor* t : ckpt.tensors()) by_name[t->name] = t;
  for (const WeightSpec& w : llama_weights(c)) {
    const auto it = by_name.find(w.name);
    if (it == by_name.end()) {
      throw std::invalid_argument(fmt::format(
          "[llama] {}: missing tensor '{}'{}", ckpt.path(), w.name,
          w.name == "lm_head.weight" ? " (config.json has tie_word_embeddings false)" : ""));
    }
    const SafeTensor& t = *it->second;
    if (t.shape != w.shape) {
      throw std::invalid_argument(
          fmt::format("[llama] {}: tensor '{}' has shape [{}], expected [{}]", ckpt.path(), w.name,
                      fmt::join(t.shape, ", "), fmt::join(w.shape, ", ")));
    }
    if (!is_float(t.dtype)) {
      throw std::invalid_argument(
          fmt::format("[llama] {}: tensor '{}' is {}, expected a float dtype", ckpt.path(), w.name,
                      dtype_name(t.dtype)));
    }
  }
}

}  // namespace luminal::models
