// `dlrm run`: load weights and inputs, build the graph or megakernel path, check against
// `expected`, optionally print the plan (--stats), time it (--bench) and write JSON (--json).
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "bench.h"
#include "commands.h"
#include "inputs.h"
#include "luminal/cuda.h"
#include "luminal/safetensors.h"
#include "model.h"

namespace dlrm {

namespace {

using luminal::nn::DlrmConfig;
using Json = nlohmann::json;

Device parse_device(const std::string& s) {
  if (s == "cpu") return Device::Cpu;
  if (s == "cuda") return Device::Cuda;
  throw std::invalid_argument(fmt::format("[dlrm] --device must be cpu or cuda, got '{}'", s));
}

std::string describe(const DlrmConfig& c) {
  return fmt::format("bottom {} | tables [{}] x d={} | top {} | batch {} bag {} | indices {}",
                     fmt::join(c.ln_bot, "-"), fmt::join(c.ln_emb, ", "), c.dim(),
                     fmt::join(c.ln_top, "-"), c.batch, c.bag, luminal::dtype_name(c.index_dtype));
}

Json timing_json(const Timing& t) {
  return {{"mean_us", t.mean_us}, {"p50_us", t.p50_us}, {"p99_us", t.p99_us}};
}

Json config_json(const DlrmConfig& c) {
  return {{"ln_bot", c.ln_bot}, {"ln_emb", c.ln_emb},
          {"ln_top", c.ln_top}, {"batch", c.batch},
          {"bag", c.bag},       {"index_dtype", luminal::dtype_name(c.index_dtype)}};
}

void print_timing(const char* what, const Timing& t) {
  std::printf("%-10s mean %10.2f us   p50 %10.2f us   p99 %10.2f us\n", what, t.mean_us, t.p50_us,
              t.p99_us);
}

// Opens weights and inputs, infers the config and checks the inputs against it.
DlrmConfig load_config(const RunOptions& o, DlrmInputs& in) {
  const luminal::SafetensorsFile w = luminal::SafetensorsFile::open(o.weights);
  const luminal::SafetensorsFile f = luminal::SafetensorsFile::open(o.inputs);
  in = load_inputs(f);
  DlrmConfig c = DlrmConfig::from_weights(w, in.batch, in.bag);
  c.index_dtype = in.file_index_dtype;  // run in the file's index dtype; other tables are converted
  prepare(in, c);
  return c;
}

// Loads weights and runs once; all of it is setup time.
std::vector<float> first_run(Model& m, const RunOptions& o, const DlrmInputs& in) {
  const size_t loaded = m.runtime->load_safetensors(o.weights);
  const size_t want =
      2 * (m.config.ln_bot.size() - 1 + m.config.ln_top.size() - 1) + m.config.ln_emb.size();
  if (loaded != want) {
    throw std::runtime_error(fmt::format("[dlrm] {}: loaded {} weight tensors, the model needs {}",
                                         o.weights, loaded, want));
  }
  bind_inputs(*m.runtime, m.tensors, in);
  m.runtime->execute();
  return m.runtime->get_f32(m.tensors.out);  // reading the output synchronizes
}

// --stats: the loaded plan's host ops and kernel count.
Json print_stats(Model& m) {
  const std::vector<std::string> ops = m.runtime->host_ops();
  for (const std::string& op : ops) std::printf("%s\n", op.c_str());
  std::printf("kernel_count %zu\n", m.runtime->kernel_count());
  return {{"host_ops", ops}, {"kernel_count", m.runtime->kernel_count()}};
}

// --bench: in host input mode every call re-uploads the inputs (timed); in device mode they stay
// resident.
Json run_bench(Model& m, const RunOptions& o, const DlrmInputs& in) {
  std::function<void()> prepare;
  if (o.input_mode == "host") prepare = [&] { bind_inputs(*m.runtime, m.tensors, in); };
  const BenchResult r = bench(m, prepare, o.warmup, o.iters);
  std::printf("[dlrm] bench: %d iterations after %d warm-up, inputs %s-resident\n", o.iters,
              o.warmup, o.input_mode.c_str());
  const bool host_events = r.events_method == "host";
  print_timing(host_events ? "events*" : "events", r.events);
  print_timing("latency", r.latency);
  std::printf("%-10s %15.2f us per call\n", "pipelined", r.pipelined_us);
  if (host_events)
    std::printf("(* no event timer in the runtime API: execute + sync on the host clock)\n");
  return {{"events", timing_json(r.events)},
          {"latency", timing_json(r.latency)},
          {"pipelined", {{"mean_us", r.pipelined_us}}},
          {"input_mode", o.input_mode},
          {"iters", r.iters},
          {"events_method", r.events_method}};
}

}  // namespace

int run_command(const RunOptions& o) {
  const Device dev = parse_device(o.device);
  if (dev == Device::Cuda && !luminal::cuda::available()) {
    throw std::runtime_error(fmt::format("[dlrm] --device cuda: no usable GPU: {}",
                                         luminal::cuda::device_description()));
  }
  if (o.input_mode != "device" && o.input_mode != "host") {
    throw std::invalid_argument(
        fmt::format("[dlrm] --input-mode must be device or host, got '{}'", o.input_mode));
  }
  DlrmInputs in;
  const DlrmConfig c = load_config(o, in);
  std::printf("[dlrm] %s\n", describe(c).c_str());
  bool mega = o.mega;
  if (mega) {
    const std::string why = mega_refusal(c);
    if (!why.empty()) {
      std::printf("[dlrm] megakernel does not fit this shape: %s; running the graph path\n",
                  why.c_str());
      mega = false;
    }
  }
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<Model> m = build_model(c, dev, mega, /*persist_inputs=*/o.input_mode == "device");
  const std::vector<float> out = first_run(*m, o, in);
  const double setup_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string device = dev == Device::Cuda ? luminal::cuda::device_description() : "cpu";
  std::printf("[dlrm] %s path on %s: setup %.3f s\n", mega ? "megakernel" : "graph", device.c_str(),
              setup_s);

  Json j = {{"device", device},
            {"path", mega ? "mega" : "graph"},
            {"config", config_json(c)},
            {"max_abs_diff", nullptr},
            {"setup_s", setup_s}};
  int rc = 0;
  if (in.expected) {
    const double diff = max_abs_diff(out, *in.expected);
    std::printf("max_abs_diff %.3e\n", diff);
    j["max_abs_diff"] = diff;
    if (!(diff <= o.tol)) {
      std::printf("[dlrm] FAIL: max_abs_diff %.3e > tol %.1e\n", diff, o.tol);
      rc = 1;
    }
  } else {
    std::printf("[dlrm] no 'expected' in %s: out[0] = %.6f\n", o.inputs.c_str(),
                out.empty() ? 0.0 : out[0]);
  }
  if (o.stats) j["stats"] = print_stats(*m);
  if (o.bench) j["bench"] = run_bench(*m, o, in);
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    if (!f) throw std::runtime_error(fmt::format("[dlrm] cannot write --json file '{}'", o.json));
    f << j.dump(1) << "\n";
  }
  return rc;
}

}  // namespace dlrm
