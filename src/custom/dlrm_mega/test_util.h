// Test helpers for the DLRM tests: a random model, an independent plain-loop forward pass (the
// oracle: no graph, double accumulation) and binding a model to a runtime.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "luminal/models/dlrm.h"
#include "luminal/nn.h"
#include "luminal/compile.h"
#include "luminal/runtime.h"
#include "luminal/safetensors.h"

namespace luminal::dlrm_test {

/// A DLRM's weights and one batch of inputs, as host vectors in PyTorch layouts.
struct Model {
  models::DlrmConfig c;
  std::vector<std::vector<float>> emb, bot_w, bot_b, top_w, top_b;
  std::vector<float> dense_x;
  std::vector<std::vector<int64_t>> indices;  // per table, [batch * bag] or (jagged) [nnz_k]
  std::vector<std::vector<int64_t>> offsets;  // jagged: per table, [batch] (bag starts)
};

/// Jagged bags for every table: lengths uniform in [0, max_bag], with empty bags forced where the
/// edges are (table 0's first bag, the last table's last bag, which ends at nnz) and one long bag
/// (3 * max_bag + 1 rows) in sample 1 of table 1.
inline void random_jagged(Model& m, std::mt19937& rng, int64_t max_bag) {
  const models::DlrmConfig& c = m.c;
  std::uniform_int_distribution<int64_t> len(0, max_bag);
  for (size_t k = 0; k < c.ln_emb.size(); ++k) {
    std::uniform_int_distribution<int64_t> u(0, c.ln_emb[k] - 1);
    std::vector<int64_t> idx, off;
    for (int64_t b = 0; b < c.batch; ++b) {
      int64_t n = len(rng);
      if ((k == 0 && b == 0) || (k + 1 == c.ln_emb.size() && b + 1 == c.batch)) n = 0;
      if (k == 1 && b == 1) n = 3 * max_bag + 1;
      off.push_back(static_cast<int64_t>(idx.size()));
      for (int64_t j = 0; j < n; ++j) idx.push_back(u(rng));
    }
    m.indices.push_back(idx);
    m.offsets.push_back(off);
  }
}

/// Deterministic weights (scaled like the dlrm repo's init) and inputs; jagged configs get bags of
/// 0..max_bag rows (random_jagged).
inline Model random_model(const models::DlrmConfig& c, uint32_t seed, int64_t max_bag = 3) {
  std::mt19937 rng(seed);
  auto fill = [&](size_t n, double scale) {
    std::uniform_real_distribution<float> u(static_cast<float>(-scale), static_cast<float>(scale));
    std::vector<float> v(n);
    for (float& f : v) f = u(rng);
    return v;
  };
  Model m{c, {}, {}, {}, {}, {}, {}, {}, {}};
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
  if (c.jagged) {
    random_jagged(m, rng, max_bag);
    return m;
  }
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
  const models::DlrmConfig& c = m.c;
  const size_t d = static_cast<size_t>(c.dim());
  std::vector<double> out;
  for (int64_t b = 0; b < c.batch; ++b) {
    std::vector<double> x(m.dense_x.begin() + b * c.ln_bot[0], m.dense_x.begin() + (b + 1) * c.ln_bot[0]);
    for (size_t l = 0; l < m.bot_w.size(); ++l) x = dense_ref(x, m.bot_w[l], m.bot_b[l], false);
    std::vector<std::vector<double>> t{x};
    for (size_t k = 0; k < m.emb.size(); ++k) {
      // PyTorch EmbeddingBag: bag b is indices[offsets[b], offsets[b + 1]), the last ending at nnz.
      const int64_t nnz = static_cast<int64_t>(m.indices[k].size());
      const int64_t lo = c.jagged ? m.offsets[k][b] : b * c.bag;
      const int64_t hi = c.jagged ? (b + 1 < c.batch ? m.offsets[k][b + 1] : nnz) : lo + c.bag;
      std::vector<double> e(d, 0.0);
      for (int64_t j = lo; j < hi; ++j) {
        const int64_t row = m.indices[k][j];
        for (size_t i = 0; i < d; ++i) e[i] += m.emb[k][row * d + i];
      }
      if (c.mode == nn::BagMode::Mean && hi > lo) {
        for (double& v : e) v /= static_cast<double>(hi - lo);  // an empty bag stays zeros
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
  const models::DlrmConfig& c = m.c;
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

/// Binds v to an integer input t in the config's index dtype.
inline void set_ints(Runtime& rt, const GraphTensor& t, const std::vector<int64_t>& v, DType dt) {
  if (dt == DType::I64) {
    rt.set_data(t, std::span<const int64_t>(v));
  } else {
    const std::vector<int32_t> i32(v.begin(), v.end());
    rt.set_data(t, std::span<const int32_t>(i32));
  }
}

/// Binds dense_x, the indices and (jagged) the offsets of a built DLRM.
inline void set_inputs(Runtime& rt, const models::DlrmGraph& dg, const Model& m) {
  rt.set_data(dg.dense_x, std::span<const float>(m.dense_x));
  for (size_t k = 0; k < dg.indices.size(); ++k)
    set_ints(rt, dg.indices[k], m.indices[k], m.c.index_dtype);
  for (size_t k = 0; k < dg.offsets.size(); ++k)
    set_ints(rt, dg.offsets[k], m.offsets[k], m.c.index_dtype);
}

/// The dynamic dims of an execute: nnz_k = len(indices_k) for jagged configs, none otherwise.
inline DynMap dyn_of(const Model& m) {
  DynMap dyn;
  for (size_t k = 0; m.c.jagged && k < m.indices.size(); ++k)
    dyn[models::DlrmConfig::nnz_name(static_cast<int64_t>(k))] =
        static_cast<int64_t>(m.indices[k].size());
  return dyn;
}

/// A config from widths (helper for terse tests).
inline models::DlrmConfig config(std::vector<int64_t> bot, std::vector<int64_t> emb, std::vector<int64_t> top,
                             int64_t batch, int64_t bag = 1, DType idx = DType::I32) {
  models::DlrmConfig c;
  c.ln_bot = std::move(bot);
  c.ln_emb = std::move(emb);
  c.ln_top = std::move(top);
  c.batch = batch;
  c.bag = bag;
  c.index_dtype = idx;
  return c;
}

/// The config with jagged bags (offsets inputs) and the given mode.
inline models::DlrmConfig jagged(models::DlrmConfig c, nn::BagMode mode = nn::BagMode::Sum) {
  c.jagged = true;
  c.mode = mode;
  return c;
}

/// The config with the given bag mode.
inline models::DlrmConfig with_mode(models::DlrmConfig c, nn::BagMode mode) {
  c.mode = mode;
  return c;
}

/// Largest |got - want|; infinite when a value is NaN or the sizes differ, so such a result
/// always fails a tolerance check.
inline double max_abs_diff(const std::vector<float>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return INFINITY;
  double m = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i])) return INFINITY;
    m = std::max(m, std::abs(got[i] - want[i]));
  }
  return m;
}

/// A PyTorch-pinned fixture (tests/fixtures/dlrm/<name>, written by examples/dlrm/export.py).
struct Fixture {
  std::string weights;           // path of weights.safetensors
  SafetensorsFile inputs;        // dense_x, indices_<k>, expected
  models::DlrmConfig c;              // inferred from the weights and the input shapes
  std::vector<double> expected;  // [batch]
};

/// The folder of fixture `name`.
inline std::string fixture_dir(const std::string& name) { return std::string(LUMINAL_FIXTURES) + "/dlrm/" + name; }

/// Opens fixture `name` and infers its config; throws when `expected` is not [batch, 1].
inline Fixture load_fixture(const std::string& name) {
  const std::string dir = fixture_dir(name);
  SafetensorsFile in = SafetensorsFile::open(dir + "/inputs.safetensors");
  const SafeTensor& x = in.at("dense_x");
  const SafeTensor& i0 = in.at("indices_0");
  const int64_t batch = x.shape.at(0);
  models::DlrmConfig c = models::DlrmConfig::from_weights(SafetensorsFile::open(dir + "/weights.safetensors"), batch,
                                                  i0.shape.at(0) / batch);
  c.index_dtype = i0.dtype;
  const SafeTensor& e = in.at("expected");
  if (e.shape != std::vector<int64_t>{batch, 1} || e.dtype != DType::F32)
    throw std::runtime_error(fmt::format("[dlrm_test] {}: 'expected' must be f32 [{}, 1]", dir, batch));
  std::vector<double> want(static_cast<size_t>(batch));
  for (size_t b = 0; b < want.size(); ++b) {
    float v;
    std::memcpy(&v, e.data.data() + b * 4, 4);
    want[b] = v;
  }
  return Fixture{dir + "/weights.safetensors", std::move(in), std::move(c), std::move(want)};
}

/// Runs a fixture compiled for `target`, as the DlrmMega op (mega) or as the primitive graph (as
/// built: the rules' alternatives stay out).
inline std::vector<float> run_fixture(const Fixture& f, bool mega, const Target& target) {
  Graph g;
  const models::DlrmGraph dg = mega ? models::build_dlrm_mega(g, f.c) : models::build_dlrm(g, f.c);
  CompileOptions opts;
  opts.alternative = "none";
  Executable rt(g, target, opts);
  load_safetensors(rt, f.weights);
  rt.set_bytes(dg.dense_x, f.inputs.at("dense_x").data);
  for (size_t k = 0; k < dg.indices.size(); ++k)
    rt.set_bytes(dg.indices[k], f.inputs.at(fmt::format("indices_{}", k)).data);
  rt.execute();
  return rt.get_f32(dg.out);
}

}  // namespace luminal::dlrm_test
