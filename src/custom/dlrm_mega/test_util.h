// Test helpers for the DLRM tests: a random model, an independent plain-loop forward pass (the
// oracle: no graph, double accumulation) and binding a model to a runtime.
#pragma once

#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "luminal/nn.h"
#include "luminal/runtime.h"
#include "luminal/safetensors.h"

namespace luminal::dlrm_test {

/// A DLRM's weights and one batch of inputs, as host vectors in PyTorch layouts.
struct Model {
  nn::DlrmConfig c;
  std::vector<std::vector<float>> emb, bot_w, bot_b, top_w, top_b;
  std::vector<float> dense_x;
  std::vector<std::vector<int64_t>> indices;  // per table, [batch * bag]
};

/// Deterministic weights (scaled like the dlrm repo's init) and inputs.
inline Model random_model(const nn::DlrmConfig& c, uint32_t seed) {
  std::mt19937 rng(seed);
  auto fill = [&](size_t n, double scale) {
    std::uniform_real_distribution<float> u(static_cast<float>(-scale), static_cast<float>(scale));
    std::vector<float> v(n);
    for (float& f : v) f = u(rng);
    return v;
  };
  Model m{c, {}, {}, {}, {}, {}, {}, {}};
  for (int64_t v : c.ln_emb) m.emb.push_back(fill(static_cast<size_t>(v * c.dim()), std::sqrt(1.0 / v)));
  auto mlp = [&](const std::vector<int64_t>& ln, auto& w, auto& b) {
    for (size_t i = 0; i + 1 < ln.size(); ++i) {
      w.push_back(fill(static_cast<size_t>(ln[i] * ln[i + 1]), std::sqrt(6.0 / (ln[i] + ln[i + 1]))));
      b.push_back(fill(static_cast<size_t>(ln[i + 1]), std::sqrt(1.0 / ln[i + 1])));
    }
  };
  mlp(c.ln_bot, m.bot_w, m.bot_b);
  mlp(c.ln_top, m.top_w, m.top_b);
  m.dense_x = fill(static_cast<size_t>(c.batch * c.ln_bot[0]), 1.0);
  for (int64_t v : c.ln_emb) {
    std::uniform_int_distribution<int64_t> u(0, v - 1);
    std::vector<int64_t> idx(static_cast<size_t>(c.batch * c.bag));
    for (int64_t& i : idx) i = u(rng);
    m.indices.push_back(idx);
  }
  return m;
}

/// y = act(W x + b) in double, W (out, in) row-major.
inline std::vector<double> dense_ref(const std::vector<double>& x, const std::vector<float>& w,
                                     const std::vector<float>& b, bool sigmoid) {
  std::vector<double> y(b.size());
  for (size_t o = 0; o < b.size(); ++o) {
    double s = b[o];
    for (size_t k = 0; k < x.size(); ++k) s += static_cast<double>(w[o * x.size() + k]) * x[k];
    y[o] = sigmoid ? 1.0 / (1.0 + std::exp(-s)) : std::max(s, 0.0);
  }
  return y;
}

/// The DLRM forward pass written as plain loops, one sample at a time: the oracle.
inline std::vector<double> forward_loops(const Model& m) {
  const nn::DlrmConfig& c = m.c;
  const size_t d = static_cast<size_t>(c.dim());
  std::vector<double> out;
  for (int64_t b = 0; b < c.batch; ++b) {
    std::vector<double> x(m.dense_x.begin() + b * c.ln_bot[0], m.dense_x.begin() + (b + 1) * c.ln_bot[0]);
    for (size_t l = 0; l < m.bot_w.size(); ++l) x = dense_ref(x, m.bot_w[l], m.bot_b[l], false);
    std::vector<std::vector<double>> t{x};
    for (size_t k = 0; k < m.emb.size(); ++k) {
      std::vector<double> e(d, 0.0);
      for (int64_t j = 0; j < c.bag; ++j) {
        const int64_t row = m.indices[k][b * c.bag + j];
        for (size_t i = 0; i < d; ++i) e[i] += m.emb[k][row * d + i];
      }
      t.push_back(e);
    }
    std::vector<double> r = x;
    for (size_t i = 0; i < t.size(); ++i) {
      for (size_t j = 0; j < i; ++j) {
        double z = 0;
        for (size_t e = 0; e < d; ++e) z += t[i][e] * t[j][e];
        r.push_back(z);
      }
    }
    for (size_t l = 0; l < m.top_w.size(); ++l) r = dense_ref(r, m.top_w[l], m.top_b[l], l + 1 == m.top_w.size());
    out.push_back(r[0]);
  }
  return out;
}

/// A per-process temp file path.
inline std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / fmt::format("luminal_dlrm_{}_{}", ::getpid(), name)).string();
}

/// Writes the model's weights with their PyTorch state_dict names.
inline void write_weights(const Model& m, const std::string& path) {
  std::vector<TensorData> ts;
  const nn::DlrmConfig& c = m.c;
  for (size_t k = 0; k < m.emb.size(); ++k) {
    ts.push_back(make_tensor_data<float>(fmt::format("emb_l.{}.weight", k), {c.ln_emb[k], c.dim()}, m.emb[k]));
  }
  auto mlp = [&](const char* name, const std::vector<int64_t>& ln, const auto& w, const auto& b) {
    for (size_t i = 0; i < w.size(); ++i) {
      ts.push_back(make_tensor_data<float>(fmt::format("{}.{}.weight", name, 2 * i), {ln[i + 1], ln[i]}, w[i]));
      ts.push_back(make_tensor_data<float>(fmt::format("{}.{}.bias", name, 2 * i), {ln[i + 1]}, b[i]));
    }
  };
  mlp("bot_l", c.ln_bot, m.bot_w, m.bot_b);
  mlp("top_l", c.ln_top, m.top_w, m.top_b);
  write_safetensors(path, ts);
}

/// Binds dense_x and the indices (in the config's index dtype) of a built DLRM.
inline void set_inputs(Runtime& rt, const nn::DlrmGraph& dg, const Model& m) {
  rt.set_data(dg.dense_x, std::span<const float>(m.dense_x));
  for (size_t k = 0; k < dg.indices.size(); ++k) {
    if (m.c.index_dtype == DType::I64) {
      rt.set_data(dg.indices[k], std::span<const int64_t>(m.indices[k]));
    } else {
      const std::vector<int32_t> i32(m.indices[k].begin(), m.indices[k].end());
      rt.set_data(dg.indices[k], std::span<const int32_t>(i32));
    }
  }
}

/// A config from widths (helper for terse tests).
inline nn::DlrmConfig config(std::vector<int64_t> bot, std::vector<int64_t> emb, std::vector<int64_t> top,
                             int64_t batch, int64_t bag = 1, DType idx = DType::I32) {
  nn::DlrmConfig c;
  c.ln_bot = std::move(bot);
  c.ln_emb = std::move(emb);
  c.ln_top = std::move(top);
  c.batch = batch;
  c.bag = bag;
  c.index_dtype = idx;
  return c;
}

}  // namespace luminal::dlrm_test
