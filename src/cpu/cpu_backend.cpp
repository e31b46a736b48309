// The CPU backend: builds CpuPlans, reports the host as its device, and is searchable (the
// compiler times candidates here with the host clock).
#include <omp.h>

#include <fstream>
#include <stdexcept>

#include <fmt/format.h>

#include "cpu/cpu_plan.h"
#include "luminal/cpu.h"

namespace luminal::cpu {

namespace {

// /proc/cpuinfo's model name and the ISA extensions among its flags that the kernels and oneDNN use.
std::string cpu_name() {
  std::ifstream f("/proc/cpuinfo");
  std::string line, name = "unknown CPU", flags;
  while (std::getline(f, line)) {
    if (line.rfind("model name", 0) == 0 && name == "unknown CPU") name = line.substr(line.find(':') + 2);
    if (line.rfind("flags", 0) == 0) {
      flags = line + " ";
      break;
    }
  }
  std::string isa;
  for (const char* x : {"avx2", "avx512f", "avx512_bf16", "avx512_vnni", "amx_bf16", "amx_int8"})
    if (flags.find(fmt::format(" {} ", x)) != std::string::npos) isa += std::string(isa.empty() ? "" : " ") + x;
  return fmt::format("{} ({})", name, isa.empty() ? "no AVX2" : isa);
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(const CpuOptions& o) : opts_(o) {
    const int threads = o.threads > 0 ? o.threads : omp_get_max_threads();
    caps_.name = fmt::format("{} ({} threads)", host_description(), threads);
    caps_.arch = "x86_64";
    caps_.sm_count = threads;
  }
  std::string kind() const override { return "cpu"; }
  std::string description() const override { return "cpu " + caps_.name; }
  std::string options_key() const override {
    return fmt::format("threads={} compiler={} flags={}", opts_.threads, opts_.compiler, opts_.flags);
    // (poison and profile change how a plan runs, not which plan wins)
  }
  const DeviceCaps& caps() const override { return caps_; }
  std::unique_ptr<BackendPlan> build(const BuildRequest& request) const override {
    auto plan = std::make_unique<CpuPlan>(opts_, caps_, request);
    plan->set_poison(opts_.poison);
    return plan;
  }
  // The custom ops with a host kernel (CustomOp::host_kernel); the others run their
  // decompositions, fused by the lowering like any graph.
  bool has_kernel(std::string_view op) const override {
    return op == "dlrm_sparse" || op == "embedding_bag" || op == "bag_concat" || op == "cumsum" || op == "cross_gemm";
  }

 private:
  CpuOptions opts_;
  DeviceCaps caps_;
};

}  // namespace

std::string host_description() {
  static const std::string d = cpu_name();
  return d;
}

std::shared_ptr<const Backend> backend(const CpuOptions& options) {
  if (options.threads < 0) throw std::invalid_argument(fmt::format("[cpu] threads must be >= 0, got {}", options.threads));
  if (options.compiler.empty()) throw std::invalid_argument("[cpu] the compiler must be named");
  return std::make_shared<CpuBackend>(options);
}

}  // namespace luminal::cpu
