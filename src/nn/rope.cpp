// Rotary position embeddings: inverse frequencies (plain and llama3-scaled), cos/sin tables, and
// the rotation itself on the GraphTensor API.
#include <cmath>
#include <numbers>
#include <stdexcept>

#include <fmt/format.h>

#include "luminal/nn.h"

namespace luminal::nn {

namespace {

// transformers' _compute_llama3_parameters, element by element in float32 like its tensors.
float llama3_scale(float inv, const RopeConfig& c) {
  const auto old_ctx = static_cast<float>(c.original_max_position_embeddings);
  const auto lo = static_cast<float>(c.low_freq_factor),
             hi = static_cast<float>(c.high_freq_factor);
  const auto factor = static_cast<float>(c.factor);
  const float low_freq_wavelen = old_ctx / lo, high_freq_wavelen = old_ctx / hi;
  const float wavelen = 2.0f * std::numbers::pi_v<float> / inv;
  if (wavelen < high_freq_wavelen) return inv;          // high frequency: unchanged
  if (wavelen > low_freq_wavelen) return inv / factor;  // low frequency: scaled down
  const float smooth = (old_ctx / wavelen - lo) / (hi - lo);
  return (1.0f - smooth) * inv / factor + smooth * inv;
}

}  // namespace

std::vector<float> rope_inv_freq(const RopeConfig& c, int64_t head_dim) {
  if (head_dim <= 0 || head_dim % 2 != 0) {
    throw std::invalid_argument(
        fmt::format("[rope] head_dim must be positive and even, got {}", head_dim));
  }
  if (c.type == RopeType::Llama3 &&
      (c.factor <= 0 || c.low_freq_factor <= 0 || c.high_freq_factor <= c.low_freq_factor ||
       c.original_max_position_embeddings <= 0)) {
    throw std::invalid_argument(fmt::format(
        "[rope] llama3 scaling needs factor > 0, 0 < low_freq_factor < high_freq_factor and "
        "original_max_position_embeddings > 0, got {}, {}, {}, {}",
        c.factor, c.low_freq_factor, c.high_freq_factor, c.original_max_position_embeddings));
  }
  std::vector<float> inv(static_cast<size_t>(head_dim / 2));
  for (size_t i = 0; i < inv.size(); ++i) {
    // base ** (2i / d) with a float32 exponent, then 1 / that, as torch does on float tensors.
    const float e = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    inv[i] = 1.0f / std::pow(static_cast<float>(c.theta), e);
    if (c.type == RopeType::Llama3) inv[i] = llama3_scale(inv[i], c);
  }
  return inv;
}

RopeTables rope_tables(std::span<const float> inv_freq, int64_t positions) {
  RopeTables t;
  t.cos.resize(static_cast<size_t>(positions) * inv_freq.size());
  t.sin.resize(t.cos.size());
  for (int64_t p = 0; p < positions; ++p) {
    for (size_t i = 0; i < inv_freq.size(); ++i) {
      // The angle rounded to float32 first (transformers' freqs tensor), cos/sin of it exact.
      const float angle = static_cast<float>(p) * inv_freq[i];
      const size_t at = static_cast<size_t>(p) * inv_freq.size() + i;
      t.cos[at] = static_cast<float>(std::cos(static_cast<double>(angle)));
      t.sin[at] = static_cast<float>(std::sin(static_cast<double>(angle)));
    }
  }
  return t;
}

// Plain ops (slices, broadcast multiplies, one concat) so a later rule can match "RoPE" and apply
// it in place on the GPU.
GraphTensor apply_rope(const GraphTensor& x, const GraphTensor& cos, const GraphTensor& sin) {
  if (x.rank() != 3 || cos.rank() != 2 || sin.rank() != 2) {
    throw std::invalid_argument(
        fmt::format("[rope] x must be [s, heads, d] and cos/sin [s, d/2], got {}, {}, {}",
                    shape_string(x.dims()), shape_string(cos.dims()), shape_string(sin.dims())));
  }
  const Expr heads = x.dims()[1], d = x.dims()[2];
  const std::optional<int64_t> dc = d.as_const();
  if (!dc || *dc % 2 != 0) {
    throw std::invalid_argument(
        fmt::format("[rope] head dim must be a constant even size, got {}", d.to_string()));
  }
  const int64_t half = *dc / 2;
  const GraphTensor c = cos.expand_dim(1, heads), s = sin.expand_dim(1, heads);  // [s, heads, d/2]
  const GraphTensor x1 = x.slice(2, 0, half), x2 = x.slice(2, half, *dc);
  return concat({x1 * c - x2 * s, x2 * c + x1 * s}, 2);
}

}  // namespace luminal::nn
