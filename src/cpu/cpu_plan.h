// CpuPlan: one graph lowered for the CPU (compiler::lower, then host code from the codegen),
// its kernels built into one native module, matmuls on oneDNN, and host buffers bound by node.
#pragma once

#include <memory>
#include <vector>

#include "compiler/kernel_plan.h"
#include "cpu/host_matmul.h"
#include "cpu/host_module.h"
#include "cpu/host_source.h"
#include "luminal/backend.h"
#include "luminal/cpu.h"

namespace luminal::cpu {

/// Host memory of one buffer: owned (aligned, grown as dims grow) or the caller's.
struct HostData {
  std::shared_ptr<std::byte> mem;  // null: none
  size_t bytes = 0;
  bool persist = false;
  bool external = false;  // the caller's memory (set_device_ptr / set_output_ptr): never freed here
  uint64_t version = 0;   // nonzero: owned persisted data, new with every write (weight_pack.h)
};

/// The CPU backend's plan (see luminal/backend.h for each call's contract).
class CpuPlan final : public BackendPlan {
 public:
  CpuPlan(const CpuOptions& options, const DeviceCaps& caps, const BuildRequest& request);
  ~CpuPlan() override;

  const Graph& graph() const override { return graph_; }
  void upload(NodeId input, std::span<const std::byte> bytes, bool persist) override;
  void set_device_ptr(NodeId input, void* ptr, size_t bytes) override;
  void set_output_ptr(NodeId output, void* ptr, size_t bytes) override;
  std::span<std::byte> host_input(NodeId input, size_t bytes) override;
  std::vector<std::byte> get_bytes(NodeId node) override;
  Buffer remove_buffer(NodeId node) override;
  void set_buffer(NodeId input, Buffer b) override;
  BoundInput take_input(NodeId input) override;
  void give_input(NodeId input, BoundInput b) override;
  bool inputs_ready() const override;
  void execute(const DynMap& dyn, bool consume) override;
  double time_us(const DynMap& dyn, int warmup, int trials) override;
  std::vector<double> execute_timed(const DynMap& dyn, int iterations) override;
  uint64_t memory_bytes() const override;
  void reserve_dim(const std::string& dim, int64_t max) override;
  void set_poison(bool on) override { poison_ = on; }
  void check_errors() override;
  PlanStats stats() const override;

 private:
  using Entry = void (*)(void* const*, const long long*, int*, long long, long long);
  struct KernelRun {
    Entry fn = nullptr;
    const HostEntry* entry = nullptr;
    Expr work_per_item = 1;  // elements a work item reads (a reduction's length), for the split
    std::vector<void*> buffers;   // the entry's arguments, refilled each run (kept: no allocation)
    std::vector<long long> dims;
  };
  void check_input(NodeId input, const char* op) const;
  /// Every plan buffer's address for these dims (owned ones grown as needed) into ptrs_.
  void bind_buffers(const DynMap& dyn);
  void run_kernel(const compiler::KernelStep& k, KernelRun& r, const DynMap& dyn);
  void run_matmul(size_t step, const compiler::MatmulStep& m, const DynMap& dyn);
  struct Decomposed;  // a custom op's decomposition as a plan of its own (custom_step.cpp)
  void run_custom(size_t step, const compiler::CustomStep& c, const DynMap& dyn);
  bool custom_has_kernel(size_t step) const;  // step's custom op ran its host kernel
  int buffer_of(NodeId node) const;

  const Graph& graph_;
  CpuOptions opts_;
  DeviceCaps caps_;  // what custom ops' host kernels are asked with
  compiler::KernelPlan plan_;
  HostSource source_;
  std::shared_ptr<HostModule> module_;
  std::unique_ptr<WeightPacks> packs_;              // constant weights packed (before the steps using it)
  std::vector<KernelRun> kernels_;                  // per step (fn null for other steps)
  std::vector<std::unique_ptr<HostMatmul>> matmuls_;  // per step (null for other steps)
  std::vector<std::shared_ptr<Decomposed>> custom_;  // per step (custom ops, built at execute)
  std::vector<HostData> inputs_;                    // per node: Inputs' data
  std::vector<HostData> owned_;                     // per plan buffer: intermediates and outputs
  std::vector<std::byte*> ptrs_;                    // per plan buffer: its address this execute
  std::vector<uint64_t> versions_;                  // per plan buffer: its input version (0: none)
  DynMap reserved_;                                 // reserve_dim's maxima
  DynMap last_dyn_;                                 // the dims of the last execute
  DynMap plan_dims_;                                // the request's dim hints (for nested plans)
  std::vector<double> step_us_;                     // profile: summed time per step
  int64_t profiled_runs_ = 0;
  bool ran_ = false;
  int error_ = 0;
  bool poison_ = false;
};

}  // namespace luminal::cpu
