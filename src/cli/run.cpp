// `luminal run MODEL.pt2 --inputs X.safetensors`: translate, compile and run an exported PyTorch
// program with no Python: outputs written as output_0, output_1, ...; --expect compares them with
// reference values; --bench times it.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "luminal/compile.h"
#include "luminal/devices.h"
#include "luminal/environment.h"
#include "luminal/program.h"
#include "luminal/safetensors.h"

namespace luminal::cli {
namespace {

struct RunArgs {
  std::string model, inputs, output, json, expect, device = "auto", precision = "fp32",
              alternative;  // "" : LUMINAL_RULES, else auto
  double tol = 1e-5;
  int64_t max_batch = 0;
  bool bench = false, stats = false, no_search = false, profile = false;
  int iterations = 200;
};

// Values of a float/int tensor as doubles (for --expect).
std::vector<double> as_doubles(DType dt, std::span<const std::byte> b) {
  const size_t n = b.size() / dtype_size(dt);
  std::vector<double> out(n);
  for (size_t i = 0; i < n; ++i) {
    const std::byte* p = b.data() + i * dtype_size(dt);
    auto get = [p]<class T>(T) {
      T v;
      std::memcpy(&v, p, sizeof(T));
      return v;
    };
    switch (dt) {
      case DType::F32:
        out[i] = get(float{});
        break;
      case DType::F64:
        out[i] = get(double{});
        break;
      case DType::F16:
        out[i] = f16_bits_to_f32(get(uint16_t{}));
        break;
      case DType::BF16:
        out[i] = bf16_bits_to_f32(get(uint16_t{}));
        break;
      case DType::I32:
        out[i] = get(int32_t{});
        break;
      case DType::I64:
        out[i] = static_cast<double>(get(int64_t{}));
        break;
      case DType::I8:
        out[i] = get(int8_t{});
        break;
      case DType::U8:
        out[i] = get(uint8_t{});
        break;
      case DType::Bool:
        out[i] = get(uint8_t{}) != 0;
        break;
    }
  }
  return out;
}

double elapsed_us(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a).count();
}

std::vector<std::string> input_names(const CompiledProgram& p) {
  std::vector<std::string> names;
  for (const ProgramTensor& t : p.program().inputs) names.push_back(t.name);
  return names;
}

// Binds every user input from the file by name (dtype and rank checked by CompiledProgram).
void bind_inputs(CompiledProgram& p, const SafetensorsFile& f) {
  const auto& ins = p.program().inputs;
  for (size_t i = 0; i < ins.size(); ++i) {
    const SafeTensor* t = f.find(ins[i].name);
    if (!t)
      throw std::invalid_argument(
          fmt::format("[run] {} has no tensor '{}' (the program's inputs: {})", f.path(),
                      ins[i].name, fmt::join(input_names(p), ", ")));
    if (t->dtype != ins[i].dtype)
      throw std::invalid_argument(fmt::format("[run] input '{}' is {} in {}, the program takes {}",
                                              ins[i].name, dtype_name(t->dtype), f.path(),
                                              dtype_name(ins[i].dtype)));
    p.set_input(i, t->data, t->shape);
  }
}

int check_expected(const std::vector<TensorData>& outs, const SafetensorsFile& want, double tol,
                   nlohmann::json& j) {
  int status = 0;
  for (size_t i = 0; i < outs.size(); ++i) {
    const SafeTensor* w = want.find(outs[i].name);
    if (!w) w = want.find(fmt::format("output.{}", i));
    if (!w)
      throw std::invalid_argument(
          fmt::format("[run] {} has no '{}' (or 'output.{}')", want.path(), outs[i].name, i));
    if (w->shape != outs[i].shape)
      throw std::invalid_argument(fmt::format("[run] {}: expected shape [{}], got [{}]",
                                              outs[i].name, fmt::join(w->shape, ", "),
                                              fmt::join(outs[i].shape, ", ")));
    const std::vector<double> got = as_doubles(outs[i].dtype, outs[i].bytes),
                              ref = as_doubles(w->dtype, w->data);
    double worst = 0;
    for (size_t k = 0; k < got.size(); ++k) {
      const double d = std::fabs(got[k] - ref[k]);
      worst = std::isnan(d) ? INFINITY : std::max(worst, d);
    }
    const bool ok = worst <= tol;
    fmt::print("  {}: max abs diff vs {} = {:.3g} ({})\n", outs[i].name, want.path(), worst,
               ok ? "ok" : "FAIL");
    j["max_abs_diff"][outs[i].name] = worst;
    if (!ok) status = 1;
  }
  return status;
}

nlohmann::json bench(CompiledProgram& p, const SafetensorsFile& inputs, int iterations) {
  std::vector<double> us;
  for (int i = -10; i < iterations; ++i) {  // 10 warm-up calls
    const auto t = std::chrono::steady_clock::now();
    bind_inputs(p, inputs);
    p.run();
    (void)p.output_bytes(0);  // synchronizes
    if (i >= 0) us.push_back(elapsed_us(t));
  }
  std::sort(us.begin(), us.end());
  double mean = 0;
  for (double u : us) mean += u / static_cast<double>(us.size());
  const double p50 = us[us.size() / 2], p99 = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  fmt::print(
      "latency (inputs from the host, output read back), {} calls: mean {:.1f} us, p50 {:.1f}, p99 "
      "{:.1f}\n",
      us.size(), mean, p50, p99);
  return {{"iterations", us.size()},
          {"mean_us", mean},
          {"p50_us", p50},
          {"p99_us", p99},
          {"method", "host clock around set inputs + run + read output 0"}};
}

int run_command(const RunArgs& a) {
  const std::string device = a.device == "auto" ? auto_device() : a.device;
  ProgramOptions opts;
  apply_environment(opts.compile);  // the documented variables first: flags win
  cuda::CudaOptions cuda_opts;
  apply_environment(cuda_opts);
  cpu::CpuOptions cpu_opts;
  cpu_opts.profile = a.profile;
  opts.target = backend_for(device, cuda_opts, cpu_opts);
  opts.compile.precision = parse_precision(a.precision);
  if (!a.alternative.empty()) opts.compile.alternative = a.alternative;
  if (a.no_search) opts.compile.search.enabled = false;
  opts.max_batch = a.max_batch;
  const auto t0 = std::chrono::steady_clock::now();
  std::unique_ptr<CompiledProgram> p = CompiledProgram::load(a.model, opts);
  const double compile_ms = elapsed_us(t0) / 1e3;
  const SafetensorsFile inputs = SafetensorsFile::open(a.inputs);
  bind_inputs(*p, inputs);
  const auto t1 = std::chrono::steady_clock::now();
  p->run();
  std::vector<TensorData> outs;
  for (size_t i = 0; i < p->program().outputs.size(); ++i) {
    const ProgramTensor& o = p->program().outputs[i];
    outs.push_back(TensorData{o.name, o.dtype, p->output_shape(i), p->output_bytes(i)});
  }
  const double first_ms = elapsed_us(t1) / 1e3;
  fmt::print("{}: {} on {} ({}), translated + compiled in {:.1f} ms, first run {:.1f} ms\n",
             a.model, fmt::join(input_names(*p), ", "), device, a.precision, compile_ms, first_ms);
  nlohmann::json j = {{"model", a.model},
                      {"device", device},
                      {"precision", a.precision},
                      {"compile_ms", compile_ms},
                      {"first_run_ms", first_ms}};
  for (const TensorData& o : outs) {
    fmt::print("  {} {} [{}]\n", o.name, dtype_name(o.dtype), fmt::join(o.shape, ", "));
    j["outputs"][o.name] = {{"dtype", dtype_name(o.dtype)}, {"shape", o.shape}};
  }
  int status = 0;
  if (!a.expect.empty()) status = check_expected(outs, SafetensorsFile::open(a.expect), a.tol, j);
  // --profile: the steps' times come from the runs after the first (the bench's, else 20 more).
  if (a.profile && a.bench) j["bench"] = bench(*p, inputs, a.iterations);
  if (a.profile && !a.bench)
    for (int i = 0; i < 20; ++i) bind_inputs(*p, inputs), p->run(), (void)p->output_bytes(0);
  if (a.stats || a.profile) {
    const PlanStats st = p->executable().stats();
    fmt::print("plan: {} kernels\n", st.kernels);
    for (const std::string& op : st.steps) fmt::print("  {}\n", op);
    j["kernels"] = st.kernels;
    j["plan"] = st.steps;
    for (const std::string& r : p->rule_report()) fmt::print("rule {}\n", r);
    j["rules"] = p->rule_report();
  }
  if (a.bench && !a.profile) j["bench"] = bench(*p, inputs, a.iterations);
  if (!a.output.empty()) write_safetensors(a.output, outs);
  if (!a.json.empty()) std::ofstream(a.json) << j.dump(2) << "\n";
  return status;
}

}  // namespace

void add_run(CLI::App& app) {
  auto a = std::make_shared<RunArgs>();
  CLI::App* cmd =
      app.add_subcommand("run", "translate, compile and run an exported PyTorch program (.pt2)");
  cmd->add_option("model", a->model, "the .pt2 archive (torch.export.save)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--inputs", a->inputs,
                  "safetensors file with one tensor per user input, by name (luminal "
                  "inspect lists them)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--device", a->device,
                  "cpu, reference, cuda, cuda:N or auto (cuda when a GPU is present)");
  cmd->add_option("--precision", a->precision,
                  "fp32, tf32 (CUDA matmuls on TF32), tf32x3 (CUDA matmuls as three TF32 products: fp32 "
                  "accuracy), bf16 or int8")
      ->check(CLI::IsMember({"fp32", "tf32", "tf32x3", "bf16", "int8"}));
  cmd->add_option("--alternative", a->alternative,
                  fmt::format("what rewrite rules apply: {} (--stats reports it)", fmt::join(rule_alternatives(), ", ")))
      ->check(CLI::IsMember(rule_alternatives()));
  cmd->add_option("--output", a->output,
                  "write the outputs (output_0, ...) to this safetensors file");
  cmd->add_option("--expect", a->expect,
                  "compare the outputs with this file's output_<i> (or output.<i>); exit 1 "
                  "beyond --tol");
  cmd->add_option("--tol", a->tol, "max abs difference accepted by --expect");
  cmd->add_flag("--bench", a->bench,
                "time --iterations calls (inputs uploaded from the host every call)");
  cmd->add_option("--iterations", a->iterations, "calls timed by --bench")
      ->check(CLI::PositiveNumber);
  cmd->add_flag("--stats", a->stats, "print the plan (kernels and steps)");
  cmd->add_flag("--profile", a->profile,
                "CPU: time every step (mean over the runs after the first: --bench's, else 20) and print the plan with them");
  cmd->add_flag("--no-search", a->no_search, "run the default plan (no timing of candidates)");
  cmd->add_option("--max-batch", a->max_batch,
                  "dim buckets 1..N over the program's dynamic batch (one plan per power of two)")
      ->check(CLI::PositiveNumber);
  cmd->add_option("--json", a->json, "write the results as JSON");
  cmd->callback([a] {
    const int status = run_command(*a);
    if (status != 0) throw CLI::RuntimeError(status);
  });
}

}  // namespace luminal::cli
