// `dlrm demo`: a seed-shaped DLRM with random weights, no files. Runs the CPU reference graph, then
// the graph and megakernel paths on the chosen device, and prints how far each is from the
// reference.
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "accuracy.h"
#include "bench.h"
#include "commands.h"
#include "inputs.h"
#include "luminal/devices.h"
#include "luminal/environment.h"
#include "model.h"
#include "luminal/models/dlrm.h"

namespace dlrm {

namespace {

using luminal::models::DlrmConfig;
using Weights = std::map<std::string, std::vector<float>>;

constexpr double kTol = 1e-4;
constexpr int kIters = 20;

// export.py's init: weights ~ N(0, sqrt(2 / (m + n))), biases ~ N(0, sqrt(1 / n)), tables ~
// U(+-sqrt(1 / V)).
Weights random_weights(const DlrmConfig& c, std::mt19937& rng) {
  Weights w;
  auto mlp = [&](const std::vector<int64_t>& ln, const char* prefix) {
    for (size_t i = 0; i + 1 < ln.size(); ++i) {
      const int64_t m = ln[i], n = ln[i + 1];
      std::normal_distribution<float> wd(0.0f, std::sqrt(2.0f / static_cast<float>(m + n)));
      std::normal_distribution<float> bd(0.0f, std::sqrt(1.0f / static_cast<float>(n)));
      std::vector<float>& wv = w[fmt::format("{}.{}.weight", prefix, 2 * i)];
      for (int64_t e = 0; e < m * n; ++e) wv.push_back(wd(rng));
      std::vector<float>& bv = w[fmt::format("{}.{}.bias", prefix, 2 * i)];
      for (int64_t e = 0; e < n; ++e) bv.push_back(bd(rng));
    }
  };
  mlp(c.ln_bot, "bot_l");
  mlp(c.ln_top, "top_l");
  for (size_t k = 0; k < c.ln_emb.size(); ++k) {
    const float bound = std::sqrt(1.0f / static_cast<float>(c.ln_emb[k]));
    std::uniform_real_distribution<float> ud(-bound, bound);
    std::vector<float>& t = w[fmt::format("emb_l.{}.weight", k)];
    for (int64_t e = 0; e < c.ln_emb[k] * c.dim(); ++e) t.push_back(ud(rng));
  }
  return w;
}

DlrmInputs random_inputs(const DlrmConfig& c, std::mt19937& rng) {
  DlrmInputs in;
  in.path = "demo";
  in.batch = c.batch;
  in.dense_width = c.ln_bot[0];
  std::uniform_real_distribution<float> ud(0.0f, 1.0f);
  for (int64_t e = 0; e < c.batch * c.ln_bot[0]; ++e) in.dense_x.push_back(ud(rng));
  for (int64_t v : c.ln_emb) {
    std::uniform_int_distribution<int64_t> id(0, v - 1);
    std::vector<int64_t>& idx = in.indices.emplace_back();
    for (int64_t e = 0; e < c.batch * c.bag; ++e) idx.push_back(id(rng));
    in.offsets.push_back(uniform_offsets(c.batch, c.bag));
  }
  detect_uniform_bags(in);
  prepare(in, c);
  return in;
}

// One row of the table: runs a path, returns its output and mean latency.
struct PathRun {
  std::vector<float> out;
  double mean_us = 0;
};

PathRun run_path(const DlrmConfig& c, const std::string& device, bool mega, const Weights& w,
                 const DlrmInputs& in) {
  luminal::CompileOptions options;
  luminal::apply_environment(options);
  options.alternative = "none";  // each row runs the path it names
  std::unique_ptr<Model> m = build_model(c, luminal::backend_for(device), device, mega,
                                         /*persist_inputs=*/true, {}, options);
  for (const auto& [name, values] : w) {
    const std::optional<luminal::NodeId> id = m->graph.find_input(name);
    if (!id) throw std::logic_error(fmt::format("[demo] graph has no input '{}'", name));
    m->runtime->set_data(luminal::GraphTensor(&m->graph, *id), std::span<const float>(values));
  }
  bind_inputs(*m->runtime, m->tensors, in);
  PathRun r;
  r.mean_us = time_latency(*m, {}, 3, kIters).mean_us;
  r.out = m->runtime->get_f32(m->tensors.out);
  return r;
}

// The device of the demo: the one named, or "auto"'s choice (said when it found no GPU).
std::string pick_device(const std::string& s) {
  if (s != "auto") return s;
  const std::string d = luminal::auto_device();
  if (!luminal::cuda::available())
    std::printf("[demo] no GPU found (%s): running on the %s backend\n",
                luminal::cuda::device_description().c_str(), d.c_str());
  return d;
}

}  // namespace

int demo_command(const DemoOptions& o) {
  DlrmConfig c;
  c.ln_bot = {13, 8, 4};
  c.ln_emb = {10, 20, 30};
  c.ln_top = {10, 8, 1};
  c.batch = o.batch;
  c.bag = 1;
  c.validate();
  const std::string dev = pick_device(o.device);
  const luminal::Target target = luminal::backend_for(dev);
  std::printf("[demo] device: %s\n", target->description().c_str());
  fmt::print(
      "[demo] DLRM: bottom MLP {}, {} tables [{}] of dim {}, dot interaction, top MLP {}; batch "
      "{}\n",
      fmt::join(c.ln_bot, "-"), c.ln_emb.size(), fmt::join(c.ln_emb, ", "), c.dim(),
      fmt::join(c.ln_top, "-"), c.batch);
  fmt::print("[demo] random weights and inputs (std::mt19937 seed 0, export.py's init)\n");
  std::mt19937 rng(0);
  const Weights w = random_weights(c, rng);
  const DlrmInputs in = random_inputs(c, rng);

  struct Row {
    std::string path;
    std::string device;
    bool mega;
  };
  // The reference runs every custom op through its decomposition: its rows are the same graph.
  const bool kernels = target->has_kernel("dlrm_mega");
  std::vector<Row> rows;
  if (dev != "reference") rows.push_back({"graph", dev, false});
  const std::string why = luminal::models::megakernel_refusal(c, target->caps());
  if (why.empty()) {
    rows.push_back({kernels ? "megakernel" : "megakernel (decomposition)", dev, true});
  } else {
    std::printf("[demo] megakernel does not fit this shape: %s\n", why.c_str());
  }

  const PathRun ref = run_path(c, "reference", false, w, in);
  fmt::print("\n{:<28} {:<7} {:<20} {}\n", "path", "device", "max abs diff vs ref",
             "time per execute (us)");
  fmt::print("{:<28} {:<7} {:<20} {:.1f}\n", "graph (CPU reference)", "cpu", "-", ref.mean_us);
  bool ok = true;
  for (const Row& r : rows) {
    const PathRun p = run_path(c, r.device, r.mega, w, in);
    const double diff = max_abs_diff(p.out, ref.out);
    ok = ok && diff <= kTol;
    fmt::print("{:<28} {:<7} {:<20.2e} {:.1f}\n", r.path, r.device, diff, p.mean_us);
  }
  std::printf("\n[demo] %s (tolerance %.0e, %d timed executes per path, inputs resident)\n",
              ok ? "OK: every path matches the CPU reference"
                 : "FAIL: a path differs from the CPU reference",
              kTol, kIters);
  return ok ? 0 : 1;
}

}  // namespace dlrm
