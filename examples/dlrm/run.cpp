// `dlrm run`: load weights and inputs, build the graph or megakernel path at a precision, check
// against `expected` (max abs diff and Spearman), optionally print the plan (--stats), time it
// (--bench) and write JSON (--json).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "accuracy.h"
#include "bench.h"
#include "commands.h"
#include "inputs.h"
#include "luminal/devices.h"
#include "luminal/precision.h"
#include "luminal/safetensors.h"
#include "model.h"
#include "synthetic.h"
#include "luminal/models/dlrm.h"

namespace dlrm {

namespace {

using luminal::models::DlrmConfig;
using Json = nlohmann::json;

// The CUDA options of a run: the environment's, with 4 graph branches for the split sparse path
// (its bags kernel reads no bottom-MLP output, so the captured graph runs it beside them).
luminal::cuda::CudaOptions cuda_options(const RunOptions& o) {
  luminal::cuda::CudaOptions c = o.cuda;
  if (o.sparse == "split") c.graph_branches = std::max(c.graph_branches, 4);
  return c;
}

std::string bags_of(const DlrmConfig& c) {
  return c.jagged ? "jagged" : fmt::format("uniform {}", c.bag);
}

std::string describe(const DlrmConfig& c) {
  const std::string inter =
      c.interaction == luminal::models::Interaction::Cross
          ? fmt::format(" | DCNv2 {} cross layers rank {} (torchrec names, logit out)", c.cross_layers, c.cross_rank)
          : "";
  return fmt::format(
      "bottom {} | tables [{}] x d={}{} | top {} | batch {}{} bags {} {} | indices {} | precision {} "
      "| sparse {}",
      fmt::join(c.ln_bot, "-"), fmt::join(c.ln_emb, ", "), c.dim(), inter, fmt::join(c.ln_top, "-"),
      c.batch, c.dynamic_batch ? " (dynamic)" : "", bags_of(c), c.mode == luminal::nn::BagMode::Sum ? "sum" : "mean",
      luminal::dtype_name(c.index_dtype), luminal::precision_name(c.precision),
      luminal::models::sparse_path_name(c.sparse));
}

Json timing_json(const Timing& t) {
  return {{"mean_us", t.mean_us}, {"p50_us", t.p50_us}, {"p99_us", t.p99_us}};
}

Json config_json(const DlrmConfig& c) {
  return {{"ln_bot", c.ln_bot},
          {"ln_emb", c.ln_emb},
          {"ln_top", c.ln_top},
          {"batch", c.batch},
          {"bag", c.jagged ? Json(nullptr) : Json(c.bag)},
          {"jagged", c.jagged},
          {"mode", c.mode == luminal::nn::BagMode::Sum ? "sum" : "mean"},
          {"index_dtype", luminal::dtype_name(c.index_dtype)}};
}

void print_timing(const char* what, const Timing& t) {
  std::printf("%-10s mean %10.2f us   p50 %10.2f us   p99 %10.2f us\n", what, t.mean_us, t.p50_us,
              t.p99_us);
}

// auto builds an fp32/tf32 model from plain ops where the target has the DLRM kernels: the DLRM
// rule then offers the megakernel and the fused sparse kernels (the search times them, or its
// default takes the first that fits). The rule matches fp32 graphs only, so bf16 / int8 keep
// choose_sparse_path's fused path, as do DCNv2 models (no rule knows a cross layer yet).
bool rule_decides(const RunOptions& o, const DlrmConfig& c, const luminal::Backend& target) {
  return o.sparse == "auto" && target.has_kernel("dlrm_sparse") && c.interaction == luminal::models::Interaction::Dot &&
         luminal::fp32_tensors(c.precision);
}

luminal::models::SparsePath parse_sparse(const std::string& s, const DlrmConfig& c,
                                         const luminal::Backend& target) {
  if (s == "auto") return luminal::models::choose_sparse_path(c, target);
  if (s == "fused") return luminal::models::SparsePath::Fused;
  if (s == "split") return luminal::models::SparsePath::Split;
  if (s == "graph") return luminal::models::SparsePath::Graph;
  throw std::invalid_argument(
      fmt::format("[dlrm] --sparse must be auto, split, fused or graph, got '{}'", s));
}

// Opens weights and inputs, infers the config (precision, sparse path, bags) and checks the inputs
// against it. The fused sparse path reads offsets, so it runs uniform-bag files as jagged ones.
DlrmConfig load_config(const RunOptions& o, const luminal::Backend& target, DlrmInputs& in) {
  const luminal::Precision precision = luminal::parse_precision(o.precision);
  if (o.synthetic >= 0) {
    DlrmConfig c = synthetic_model(o, target, in);
    if (o.max_batch > 0 && in.batch > o.max_batch)
      throw std::invalid_argument(fmt::format("[dlrm] --batch {} is above --max-batch {}", in.batch, o.max_batch));
    c.dynamic_batch = o.max_batch > 0;  // --bench-batches then times prefixes of the generated batch
    c.sparse = parse_sparse(o.sparse, c, target);
    prepare(in, c);
    return c;
  }
  if (o.weights.empty() || o.inputs.empty())
    throw std::invalid_argument("[dlrm] run needs --weights and --inputs (or --preset P --synthetic SEED --batch N)");
  const luminal::SafetensorsFile w = luminal::SafetensorsFile::open(o.weights);
  const luminal::SafetensorsFile f = luminal::SafetensorsFile::open(o.inputs);
  in = load_inputs(f);
  if (o.take_batch > 0) in = take_batch(in, o.take_batch);
  if (o.max_batch > 0 && in.batch > o.max_batch)
    throw std::invalid_argument(fmt::format("[dlrm] the inputs' batch {} is above --max-batch {}",
                                            in.batch, o.max_batch));
  DlrmConfig c = DlrmConfig::from_weights(w, in.batch, in.uniform_bag.value_or(1));
  c.dynamic_batch = o.max_batch > 0;
  c.index_dtype = in.file_index_dtype;  // run in the file's index dtype; other tables are converted
  c.precision = precision;
  c.sparse = parse_sparse(o.sparse, c, target);
  c.jagged = !in.uniform_bag || luminal::models::uses_sparse_op(c.sparse);
  if (rule_decides(o, c, target)) c.sparse = luminal::models::SparsePath::Graph, c.jagged = true;
  prepare(in, c);
  return c;
}

// --mega: the megakernel's config (its own sparse path; uniform or jagged bags as the file has
// them), or nullopt with the reason printed when it refuses (the graph path then runs).
std::optional<DlrmConfig> mega_config(DlrmConfig c, const DlrmInputs& in,
                                      const luminal::Backend& target) {
  c.sparse = luminal::models::SparsePath::Graph;
  c.jagged = !in.uniform_bag;
  const std::string why = luminal::models::megakernel_refusal(c, target.caps());
  if (why.empty()) return c;
  std::printf("[dlrm] megakernel does not fit this model: %s; running the graph path\n",
              why.c_str());
  return std::nullopt;
}

// Loads weights at the model's precision and runs once; all of it is setup time.
std::vector<float> first_run(Model& m, const RunOptions& o, const DlrmInputs& in) {
  const size_t loaded =
      o.synthetic >= 0
          ? luminal::models::load_synthetic_weights(*m.runtime, m.tensors, m.config, uint64_t(o.synthetic),
                                                    [](const std::string& line) { std::printf("%s\n", line.c_str()); std::fflush(stdout); })
          : luminal::models::load_dlrm_weights(*m.runtime, m.tensors, m.config,
                                               luminal::SafetensorsFile::open(o.weights));
  const size_t want = 2 * (m.config.ln_bot.size() - 1 + m.config.ln_top.size() - 1) + m.config.ln_emb.size() +
                     3 * size_t(m.config.cross_layers);
  if (loaded != want) {
    throw std::runtime_error(fmt::format("[dlrm] {}: loaded {} weight tensors, the model needs {}",
                                         o.weights, loaded, want));
  }
  bind_inputs(*m.runtime, m.tensors, in);
  m.runtime->execute(m.dyn);
  return m.runtime->get_f32(m.tensors.out);  // reading the output synchronizes
}

// Max abs diff and Spearman vs `expected`, printed and put into j; returns the exit code.
int check_accuracy(const RunOptions& o, const DlrmConfig& c, const std::vector<float>& out,
                   const DlrmInputs& in, Json& j) {
  if (!in.expected) {
    std::printf("[dlrm] no 'expected' in %s: out[0] = %.6f\n", in.path.c_str(),
                out.empty() ? 0.0 : out[0]);
    return 0;
  }
  const double tol = o.tol >= 0 ? o.tol : default_tol(c.precision);
  const double diff = max_abs_diff(out, *in.expected);
  const double rho = spearman(out, *in.expected);
  std::printf("max_abs_diff %.3e (tol %.1e, %s)\nspearman %.6f (min %.4f)\n", diff, tol,
              luminal::precision_name(c.precision).data(), rho, o.min_spearman);
  j["max_abs_diff"] = diff;
  j["spearman"] = rho;
  j["tol"] = tol;
  int rc = 0;
  if (!(diff <= tol)) {
    std::printf("[dlrm] FAIL: max_abs_diff %.3e > tol %.1e\n", diff, tol);
    rc = 1;
  }
  if (!(rho >= o.min_spearman)) {
    std::printf("[dlrm] FAIL: spearman %.6f < %.4f\n", rho, o.min_spearman);
    rc = 1;
  }
  return rc;
}

// --stats: what the search chose at each choice point, and what it cost.
Json print_search(const luminal::SearchReport& r) {
  if (!r.ran) {
    std::printf("search: off (the default plan%s%s)\n", r.candidate.empty() ? "" : ": ",
                r.candidate.c_str());
    for (const std::string& line : r.choices) std::printf("  %s\n", line.c_str());
    return {{"ran", false}, {"candidate", r.candidate}, {"choices", r.choices}};
  }
  std::printf("search: %s, %d candidates (%d discarded)%s, %.2f s; winner %.2f us, default "
              "plan %.2f us\n",
              r.from_cache ? "plan cache hit" : "searched", r.candidates, r.discarded,
              r.exhaustive ? ", exhaustive" : "", r.seconds, r.us, r.heuristic_us);
  for (const std::string& line : r.choices) std::printf("  %s\n", line.c_str());
  return {{"ran", true},           {"from_cache", r.from_cache},   {"candidate", r.candidate},
          {"us", r.us},            {"heuristic_us", r.heuristic_us}, {"candidates", r.candidates},
          {"discarded", r.discarded}, {"exhaustive", r.exhaustive}, {"seconds", r.seconds},
          {"choices", r.choices}};
}

// --stats: the model's plan (precision, sparse path, bags) and the runtime's host ops and kernels.
Json print_stats(Model& m) {
  const DlrmConfig& c = m.config;
  std::printf("plan: %s path, precision %s, sparse path %s, bags %s, %zu nodes\n",
              m.mega ? "megakernel" : "graph", luminal::precision_name(c.precision).data(),
              luminal::models::sparse_path_name(c.sparse).data(), bags_of(c).c_str(), m.graph.size());
  const luminal::PlanStats st = m.runtime->stats();
  for (const std::string& op : st.steps) std::printf("%s\n", op.c_str());
  std::printf("kernel_count %zu\n", st.kernels);
  Json j = {{"host_ops", st.steps}, {"kernel_count", st.kernels}, {"graph_nodes", m.graph.size()}};
  // Backend counters: on CUDA graph_streams (parallel branches of the captured graph, 0 before
  // the first capture) and gemv_launches_saved.
  for (const auto& [name, value] : st.counters) {
    std::printf("%s %lld\n", name.c_str(), static_cast<long long>(value));
    j[name] = value;
  }
  if (m.runtime->active_bucket() >= 0) {
    std::printf("bucket %d (%d plans built)\n", m.runtime->active_bucket(),
                m.runtime->buckets_built());
    j["bucket"] = m.runtime->active_bucket();
    j["buckets_built"] = m.runtime->buckets_built();
  }
  for (const std::string& r : m.runtime->rule_report()) std::printf("rule %s\n", r.c_str());
  j["rules"] = m.runtime->rule_report();
  j["search"] = print_search(m.runtime->search_report());
  return j;
}

// --bench: in host input mode every call re-uploads the inputs (timed); in device mode they stay
// resident.
Json run_bench(Model& m, const RunOptions& o, const DlrmInputs& in) {
  std::function<void()> prepare;
  if (o.input_mode == "host") prepare = [&] { bind_inputs(*m.runtime, m.tensors, in); };
  if (o.input_mode == "pinned") {
    bind_inputs_pinned(*m.runtime, m.tensors, in, /*write=*/true);
    prepare = [&] { bind_inputs_pinned(*m.runtime, m.tensors, in, /*write=*/false); };
  }
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

// --bench-batches: the same model at each batch (the file's first b samples): output checked
// against the file's expected values, then timed. Rows go to stdout and into the JSON.
Json run_batches(Model& m, const RunOptions& o, const DlrmInputs& all, int& rc) {
  Json rows = Json::array();
  std::printf("%8s %7s %10s %12s %12s %10s\n", "batch", "bucket", "setup_ms", "latency_us",
              "events_us", "max_diff");
  for (int64_t b : o.bench_batches) {
    DlrmInputs in = take_batch(all, b);
    prepare(in, m.config);
    m.dyn = dyn_dims(m.config, in);
    const auto t0 = std::chrono::steady_clock::now();
    bind_inputs(*m.runtime, m.tensors, in);
    m.runtime->execute(m.dyn);  // the first execute in a bucket builds (and searches) its plan
    const std::vector<float> out = m.runtime->get_f32(m.tensors.out);
    const double setup_ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const double diff = in.expected ? max_abs_diff(out, *in.expected) : -1;
    const double tol = o.tol >= 0 ? o.tol : default_tol(m.config.precision);
    if (in.expected && !(diff <= tol)) rc = 1;
    const BenchResult r = bench(m, {}, o.warmup, o.iters);
    const int bucket = m.runtime->active_bucket();
    std::printf("%8lld %7d %10.1f %12.2f %12.2f %10.2e%s\n", static_cast<long long>(b), bucket,
                setup_ms, r.latency.mean_us, r.events.mean_us, diff,
                in.expected && !(diff <= tol) ? "  FAIL" : "");
    Json row = {{"batch", b},
                {"bucket", bucket},
                {"setup_ms", setup_ms},
                {"max_abs_diff", diff},
                {"latency", timing_json(r.latency)},
                {"events", timing_json(r.events)}};
    row["search"] = print_search(m.runtime->search_report());
    rows.push_back(std::move(row));
  }
  return rows;
}

}  // namespace

int run_command(const RunOptions& o) {
  const std::string device = o.device == "auto" ? luminal::auto_device() : o.device;
  const luminal::Target target = luminal::backend_for(device, cuda_options(o), o.cpu);
  if (o.input_mode != "device" && o.input_mode != "host" && o.input_mode != "pinned") {
    throw std::invalid_argument(
        fmt::format("[dlrm] --input-mode must be device, host or pinned, got '{}'", o.input_mode));
  }
  DlrmInputs in;
  DlrmConfig c = load_config(o, *target, in);
  std::optional<DlrmConfig> mega = o.mega ? mega_config(c, in, *target) : std::nullopt;
  if (mega) {
    c = *mega;
    prepare(in, c);
  }
  std::printf("[dlrm] %s\n", describe(c).c_str());
  if ((c.precision == luminal::Precision::TF32 || c.precision == luminal::Precision::TF32X3) &&
      target->caps().cc_major == 0)
    std::printf("[dlrm] %s on %s: its matmuls stay exact fp32\n", luminal::precision_name(c.precision).data(),
                device.c_str());
  const auto t0 = std::chrono::steady_clock::now();
  if (!o.bench_batches.empty() && (o.max_batch == 0 || o.input_mode != "device"))
    throw std::invalid_argument("[dlrm] --bench-batches needs --max-batch and --input-mode device");
  for (int64_t b : o.bench_batches)
    if (b > in.batch)
      throw std::invalid_argument(
          fmt::format("[dlrm] --bench-batches {}: the inputs have {} samples", b, in.batch));
  std::unique_ptr<Model> m =
      build_model(c, target, device, mega.has_value(), /*persist_inputs=*/o.input_mode == "device",
                  dyn_dims(c, in), o.compile, o.max_batch);
  const std::vector<float> out = first_run(*m, o, in);
  const double setup_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const std::string where = target->description();
  std::printf("[dlrm] %s path on %s: setup %.3f s\n", mega ? "megakernel" : "graph", where.c_str(),
              setup_s);

  Json j = {{"device", where},
            {"path", mega ? "mega" : "graph"},
            {"precision", std::string(luminal::precision_name(c.precision))},
            {"sparse_path",
             mega ? std::string("mega") : std::string(luminal::models::sparse_path_name(c.sparse))},
            {"config", config_json(c)},
            {"max_abs_diff", nullptr},
            {"spearman", nullptr},
            {"setup_s", setup_s}};
  int rc = check_accuracy(o, c, out, in, j);
  // With --profile the steps' times are means over the runs so far: print the plan after the bench.
  const bool stats_after = o.cpu.profile && o.bench;
  if (o.stats && !stats_after) j["stats"] = print_stats(*m);
  if (o.bench) j["bench"] = run_bench(*m, o, in);
  if (o.stats && stats_after) j["stats"] = print_stats(*m);
  if (!o.bench_batches.empty()) j["batches"] = run_batches(*m, o, in, rc);
  if (!o.json.empty()) {
    std::ofstream f(o.json);
    if (!f) throw std::runtime_error(fmt::format("[dlrm] cannot write --json file '{}'", o.json));
    f << j.dump(1) << "\n";
  }
  return rc;
}

}  // namespace dlrm
