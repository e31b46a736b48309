// `dlrm run --preset P --synthetic SEED`: a DLRM-v2 preset with weights and inputs generated from a
// seed (MLPerf's full tables cannot be written to disk and read back on the benchmark machines), its
// size checked against the device's memory before anything is allocated, and, for small models,
// `expected` computed on the CPU reference from the same seed.
#include "synthetic.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "luminal/devices.h"
#include "model.h"

namespace dlrm {

namespace {

using luminal::models::DlrmConfig;

// The host's available memory (MemAvailable), or 0 when unknown.
size_t host_available_bytes() {
  std::ifstream f("/proc/meminfo");
  std::string key;
  size_t kb = 0;
  std::string unit;
  while (f >> key >> kb >> unit)
    if (key == "MemAvailable:") return kb * 1024;
  return 0;
}

int64_t coprime_near_golden(int64_t v) {  // export.py's _coprime: spreads the hot ranks over the table
  int64_t m = std::max<int64_t>(1, int64_t(double(v) * 0.6180339887));
  while (std::gcd(m, v) != 1) ++m;
  return m;
}

// A row of a table of v rows: uniform, or (alpha > 0) rank r in [1, v] with P ~ r^-alpha (the
// continuous law's inverse CDF) mapped through export.py's bijection so hot rows are not all at 0.
struct RowSampler {
  int64_t v, mult;
  double alpha;
  int64_t operator()(std::mt19937_64& rng) const {
    if (alpha <= 0) return std::uniform_int_distribution<int64_t>(0, v - 1)(rng);
    const double u = std::uniform_real_distribution<double>(0.0, 1.0)(rng);
    const double e = 1.0 - alpha;
    const double x = std::abs(e) < 1e-9 ? std::exp(u * std::log(double(v) + 1.0))
                                        : std::pow(1.0 + u * (std::pow(double(v) + 1.0, e) - 1.0), 1.0 / e);
    const int64_t rank = std::clamp<int64_t>(int64_t(std::floor(x)), 1, v) - 1;
    return int64_t((__int128(rank) * mult + v / 3) % v);
  }
};

// Multi-hot bags of exactly hots[k] rows per sample (MLPerf's sizes), uniform or power-law (alpha > 0);
// dense features in [0, 1). The caller names them (in.path).
DlrmInputs make_inputs(const DlrmConfig& c, const std::vector<int64_t>& hots, uint64_t seed, double alpha) {
  std::mt19937_64 rng(seed ^ 0xD1CEull);
  DlrmInputs in;
  in.batch = c.batch;
  in.dense_width = c.ln_bot[0];
  in.file_index_dtype = c.index_dtype;
  std::uniform_real_distribution<float> u(0.f, 1.f);
  for (int64_t i = 0; i < c.batch * c.ln_bot[0]; ++i) in.dense_x.push_back(u(rng));
  for (size_t k = 0; k < c.ln_emb.size(); ++k) {
    const RowSampler row{c.ln_emb[k], coprime_near_golden(c.ln_emb[k]), alpha};
    std::vector<int64_t> idx, off;
    for (int64_t b = 0; b < c.batch; ++b) {
      off.push_back(int64_t(idx.size()));
      for (int64_t j = 0; j < hots[k]; ++j) idx.push_back(row(rng));
    }
    in.indices.push_back(std::move(idx));
    in.offsets.push_back(std::move(off));
    in.feature_keys.push_back(fmt::format("cat_{}", k));
  }
  return in;
}

// Models up to this many fp32 weight bytes and dense FLOPs per call get `expected` from the CPU
// reference (an oracle written for clarity: ~1 GFLOP/s; MLPerf's widths are 32 MFLOP per sample).
constexpr size_t kReferenceBytes = size_t(256) << 20;
constexpr double kReferenceFlops = 2e9;

// The dense FLOPs of one call: the MLPs and the cross layers' two GEMMs each.
double dense_flops(const DlrmConfig& c) {
  double macs = 0;
  for (const auto* ln : {&c.ln_bot, &c.ln_top})
    for (size_t i = 0; i + 1 < ln->size(); ++i) macs += double((*ln)[i]) * double((*ln)[i + 1]);
  macs += double(c.cross_layers) * 2.0 * double(c.ln_top[0]) * double(c.cross_rank);
  return 2.0 * macs * double(c.batch);
}

}  // namespace

DlrmConfig synthetic_model(const RunOptions& o, const luminal::Backend& target, DlrmInputs& in) {
  if (!o.weights.empty() || !o.inputs.empty())
    throw std::invalid_argument("[dlrm] --synthetic generates weights and inputs: drop --weights / --inputs");
  if (o.preset.empty()) throw std::invalid_argument("[dlrm] --synthetic needs --preset (dlrm-v2, dlrm-v2-small)");
  if (o.batch <= 0) throw std::invalid_argument("[dlrm] --synthetic needs --batch N (N > 0)");
  DlrmConfig c = luminal::models::dlrm_v2_preset(o.preset, o.max_rows, o.batch);
  c.precision = luminal::parse_precision(o.precision);
  const size_t need = luminal::models::dlrm_weight_bytes(c);
  const size_t have = target.caps().memory_bytes > 0 ? target.caps().memory_bytes : host_available_bytes();
  const std::string where = target.caps().memory_bytes > 0 ? "device memory" : "available host memory";
  if (have > 0 && need > have)
    throw std::invalid_argument(fmt::format(
        "[dlrm] {} at {} needs {:.1f} GB of weights, more than the {:.1f} GB of {}: use --max-rows, bf16 or a "
        "bigger device", o.preset, luminal::precision_name(c.precision), double(need) / 1e9, double(have) / 1e9,
        where));
  const bool powerlaw = o.dist == "powerlaw";
  if (!powerlaw && o.dist != "uniform")
    throw std::invalid_argument(fmt::format("[dlrm] --dist must be uniform or powerlaw, got '{}'", o.dist));
  in = make_inputs(c, luminal::models::dlrm_v2_hots(o.preset), uint64_t(o.synthetic), powerlaw ? o.alpha : 0.0);
  const std::string rows = powerlaw ? fmt::format("power-law rows, alpha {}", o.alpha) : "uniform rows";
  in.path = fmt::format("synthetic inputs (seed {}, {})", o.synthetic, rows);
  std::printf("[dlrm] synthetic %s (seed %lld): %.2f GB of weights at %s; %s\n", o.preset.c_str(),
              static_cast<long long>(o.synthetic), double(need) / 1e9, luminal::precision_name(c.precision).data(),
              rows.c_str());
  DlrmConfig f32 = c;
  f32.precision = luminal::Precision::F32;
  const double flops = dense_flops(c);
  const size_t f32_bytes = luminal::models::dlrm_weight_bytes(f32);
  if (f32_bytes > kReferenceBytes || flops > kReferenceFlops) {
    std::printf("[dlrm] not checked against the CPU reference: %.2f GB of fp32 weights, %.1f GFLOP per call "
                "(it checks up to %.2f GB and %.0f GFLOP)\n", double(f32_bytes) / 1e9, flops / 1e9,
                double(kReferenceBytes) / 1e9, kReferenceFlops / 1e9);
  } else {
    // The oracle on the same seed: the device's result is checked as a file's would be.
    f32.sparse = luminal::models::SparsePath::Graph;
    const luminal::Target ref = luminal::backend_for("reference");
    auto m = build_model(f32, ref, "reference", false, false, dyn_dims(f32, in), luminal::CompileOptions{});
    luminal::models::load_synthetic_weights(*m->runtime, m->tensors, f32, uint64_t(o.synthetic));
    prepare(in, f32);
    bind_inputs(*m->runtime, m->tensors, in);
    m->runtime->execute(m->dyn);
    in.expected = m->runtime->get_f32(m->tensors.out);
  }
  return c;
}

}  // namespace dlrm
