// DLRM-v2 presets and weights generated from a seed: MLPerf's full table set (52 GB in bf16) cannot
// be written to a 64 GB disk and read back, so benchmarks materialize it where it runs.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "luminal/models/dlrm.h"
#include "luminal/nn.h"
#include "luminal/runtime.h"

namespace luminal::models {

namespace {

// MLPerf Inference DLRM-v2 (mlcommons/inference recommendation/dlrm_v2, torchrec DLRM_DCN).
const std::vector<int64_t> kMlperfRows = {40000000, 39060, 17295, 7424, 20265, 3, 7122, 1543, 63,
                                          40000000, 3067956, 405282, 10, 2209, 11938, 155, 4, 976,
                                          14, 40000000, 40000000, 40000000, 590152, 12973, 108, 36};
const std::vector<int64_t> kMlperfHots = {3, 2, 1, 2, 6, 1, 1, 1, 1, 7, 3, 8, 1,
                                          6, 9, 5, 1, 1, 1, 12, 100, 27, 10, 3, 1, 1};

uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Element i of tensor `stream` under `seed`, uniform in [-a, a): a counter-based generator, so
// any element (and any device) gets the same value without generating the ones before it.
float uniform(uint64_t seed, uint64_t stream, uint64_t i, float a) {
  const uint64_t r = splitmix64(splitmix64(seed * 0x100000001B3ull ^ stream) + i);
  return (float(r >> 40) / float(1ull << 24) * 2.f - 1.f) * a;
}

// Fills t (its constant shape) with uniform(seed, stream, i, a) in t's dtype.
void fill(Runtime& rt, const GraphTensor& t, uint64_t seed, uint64_t stream, float a) {
  int64_t n = 1;
  for (const Expr& e : t.dims()) n *= e.as_const().value();
  if (t.dtype == DType::BF16) {
    std::vector<bf16> v(static_cast<size_t>(n));
#pragma omp parallel for schedule(static) if (n > (1 << 20))  // MLPerf's 40M-row tables: 5G values each
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = bf16(uniform(seed, stream, uint64_t(i), a));
    rt.set_data(t, std::span<const bf16>(v));
  } else if (t.dtype == DType::F32) {
    std::vector<float> v(static_cast<size_t>(n));
#pragma omp parallel for schedule(static) if (n > (1 << 20))
    for (int64_t i = 0; i < n; ++i) v[size_t(i)] = uniform(seed, stream, uint64_t(i), a);
    rt.set_data(t, std::span<const float>(v));
  } else {
    throw std::invalid_argument(fmt::format("[dlrm] synthetic weights are f32 or bf16, not {} ('{}')",
                                            dtype_name(t.dtype), t.node().name));
  }
}

// Binds a RowwiseU8 table (codes [rows, d] + scale_bias [rows, 2]) quantized from the values fill()
// would give the f32 table: chunks of rows generated and quantized (nn::quantize_rowwise_u8) in
// parallel, so a 40M-row table never exists in f32.
void fill_rowwise_u8(Runtime& rt, const GraphTensor& codes, const GraphTensor& scale_bias, uint64_t seed,
                     uint64_t stream, float a, int64_t rows, int64_t dim) {
  constexpr int64_t kChunk = 4096;
  std::vector<uint8_t> q(size_t(rows * dim));
  std::vector<float> sb(size_t(2 * rows));
#pragma omp parallel for schedule(dynamic) if (rows > kChunk)
  for (int64_t r0 = 0; r0 < rows; r0 += kChunk) {
    const int64_t n = std::min(kChunk, rows - r0);
    std::vector<float> v(size_t(n * dim));
    for (int64_t i = 0; i < n * dim; ++i) v[size_t(i)] = uniform(seed, stream, uint64_t(r0 * dim + i), a);
    const nn::RowwiseU8Table t = nn::quantize_rowwise_u8(v, n, dim);
    std::copy(t.codes.begin(), t.codes.end(), q.begin() + r0 * dim);
    std::copy(t.scale_bias.begin(), t.scale_bias.end(), sb.begin() + 2 * r0);
  }
  rt.set_data(codes, std::span<const uint8_t>(q));
  rt.set_data(scale_bias, std::span<const float>(sb));
}

}  // namespace

DlrmConfig dlrm_v2_preset(std::string_view name, int64_t max_rows, int64_t batch) {
  DlrmConfig c;
  if (name == "dlrm-v2") {
    c.ln_bot = {13, 512, 256, 128};
    c.ln_emb = kMlperfRows;
    c.cross_layers = 3, c.cross_rank = 512;
    c.ln_top = {27 * 128, 1024, 1024, 512, 256, 1};
  } else if (name == "dlrm-v2-small") {  // export_v2.py's: 4 tables x 16
    c.ln_bot = {13, 64, 16};
    c.ln_emb = {1000, 1000, 1000, 1000};
    c.cross_layers = 2, c.cross_rank = 8;
    c.ln_top = {5 * 16, 32, 16, 1};
  } else {
    throw std::invalid_argument(fmt::format("[dlrm] unknown preset '{}' (dlrm-v2, dlrm-v2-small)", name));
  }
  if (max_rows > 0)
    for (int64_t& r : c.ln_emb) r = std::min(r, max_rows);
  c.interaction = Interaction::Cross;
  c.names = WeightNames::TorchRec;
  c.sigmoid = false;
  c.jagged = true;
  c.batch = batch;
  for (size_t k = 0; k < c.ln_emb.size(); ++k) c.table_names.push_back(fmt::format("t_cat_{}", k));
  c.validate();
  return c;
}

std::vector<int64_t> dlrm_v2_hots(std::string_view name) {
  if (name == "dlrm-v2") return kMlperfHots;
  return {kMlperfHots.begin(), kMlperfHots.begin() + 4};
}

size_t dlrm_weight_bytes(const DlrmConfig& c) {
  const size_t es = fp32_tensors(c.precision) ? 4 : 2;
  size_t table = 0, dense = 0;
  for (int64_t r : c.ln_emb) table += size_t(r) * size_t(c.dim());
  for (const auto* ln : {&c.ln_bot, &c.ln_top})
    for (size_t i = 0; i + 1 < ln->size(); ++i) dense += size_t((*ln)[i] + 1) * size_t((*ln)[i + 1]);
  dense += size_t(c.cross_layers) * size_t(c.ln_top[0]) * size_t(2 * c.cross_rank + 1);
  size_t rows = 0;
  for (int64_t r : c.ln_emb) rows += size_t(r);
  // Int8: one byte per element plus an f32 scale and bias per row.
  const size_t table_bytes = int8_tables(c.precision) ? table + 8 * rows : table * es;
  return table_bytes + dense * es;
}

size_t load_synthetic_weights(Runtime& rt, const DlrmGraph& g, const DlrmConfig& c, uint64_t seed,
                              const std::function<void(const std::string&)>& progress) {
  const DlrmTensors& t = g.inputs;
  uint64_t stream = 0;
  size_t n = 0;
  auto fan_in = [](const GraphTensor& w) { return float(w.dims()[1].as_const().value()); };
  const auto t0 = std::chrono::steady_clock::now();
  double done = 0;
  for (size_t k = 0; k < t.tables.size(); ++k, ++n) {  // torchrec's init: uniform(+-sqrt(1 / rows))
    const float a = std::sqrt(1.f / float(c.ln_emb[k]));
    if (int8_tables(c.precision))  // the same values as the f32 table, quantized row-wise
      fill_rowwise_u8(rt, t.tables[k], t.scale_bias[k], seed, stream++, a, c.ln_emb[k], c.dim());
    else
      fill(rt, t.tables[k], seed, stream++, a);
    const double bytes = double(c.ln_emb[k]) * double(c.dim()) * double(dtype_size(t.tables[k].dtype));
    done += bytes;
    if (progress && bytes >= 1e9)
      progress(fmt::format("[dlrm] synthetic table {}/{} ({} x {}, {:.1f} GB) bound; {:.1f} GB in {:.1f} s", k + 1,
                           t.tables.size(), c.ln_emb[k], c.dim(), bytes / 1e9, done / 1e9,
                           std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()));
  }
  for (const auto& [ws, bs] : {std::pair{&t.bot_w, &t.bot_b}, std::pair{&t.top_w, &t.top_b}})
    for (size_t i = 0; i < ws->size(); ++i, n += 2) {  // nn.Linear's: uniform(+-1 / sqrt(in))
      const float a = 1.f / std::sqrt(fan_in((*ws)[i]));
      fill(rt, (*ws)[i], seed, stream++, a);
      fill(rt, (*bs)[i], seed, stream++, a);
    }
  for (size_t l = 0; l < t.cross_v.size(); ++l, n += 3) {
    fill(rt, t.cross_v[l], seed, stream++, 1.f / std::sqrt(fan_in(t.cross_v[l])));
    fill(rt, t.cross_w[l], seed, stream++, 1.f / std::sqrt(fan_in(t.cross_w[l])));
    fill(rt, t.cross_b[l], seed, stream++, 0.01f);
  }
  return n;
}

}  // namespace luminal::models
