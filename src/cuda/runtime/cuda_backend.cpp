// The CUDA backend: its options checked once, its device's capabilities, and plans built on it.
#include <fmt/format.h>

#include <algorithm>
#include <initializer_list>
#include <stdexcept>

#include "cuda/runtime/cuda_plan.h"
#include "cuda/runtime/nvrtc.h"
#include "luminal/custom_op.h"

namespace luminal::cuda {

DeviceCaps device_caps(const DeviceInfo& dev) {
  DeviceCaps c;
  c.name = dev.name;
  c.arch = dev.arch();
  c.cc_major = dev.cc_major;
  c.cc_minor = dev.cc_minor;
  c.sm_count = dev.sm_count;
  c.shared_per_block = dev.shared_per_block;
  c.shared_per_sm = dev.shared_per_sm;
  c.l2_bytes = dev.l2_bytes;
  c.memory_bytes = dev.total_mem;
  return c;
}

namespace {

void check_knob(const char* name, int v, std::initializer_list<int> allowed) {
  if (std::find(allowed.begin(), allowed.end(), v) == allowed.end())
    throw std::invalid_argument(fmt::format("[cuda] {} = {}: not one of the allowed values", name, v));
}

class CudaBackend final : public Backend {
 public:
  explicit CudaBackend(const CudaOptions& o) : opts_(o), dev_(device_info(o.device)) {
    if (o.graph_branches < 1)
      throw std::invalid_argument(
          fmt::format("[cuda] graph_branches = {}: at least 1", o.graph_branches));
    check_knob("gemv.loads", o.gemv.loads, {2, 4, 8, 16});
    check_knob("gemv.splits", o.gemv.splits, {0, 1, 2, 4, 8});
    caps_ = device_caps(dev_);
  }

  std::string kind() const override { return "cuda"; }

  std::string description() const override {
    return fmt::format("cuda:{} {} ({})", dev_.ordinal, dev_.name, dev_.arch());
  }

  std::string options_key() const override {
    const GemvOptions& g = opts_.gemv;
    return fmt::format(
        "graph={} branches={}{} autotune={} gemv={}/{}/{}/{}/{} staged_in_graph={} fp8_timed={}",
        opts_.cuda_graph, opts_.graph_branches, opts_.branch_priorities ? " priorities" : "", opts_.matmul_autotune,
        g.enabled, g.loads,
        g.splits, g.group, g.residual, opts_.staged_in_graph, opts_.fp8_timed);
  }

  const DeviceCaps& caps() const override { return caps_; }

  std::unique_ptr<BackendPlan> build(const BuildRequest& request) const override {
    return std::make_unique<CudaPlan>(opts_, dev_, request);
  }

  // Every custom op of src/custom has a CUDA kernel (it may still decline a shape at run time,
  // and the decomposition runs then).
  bool has_kernel(std::string_view op) const override {
    (void)op;
    return true;
  }

 private:
  CudaOptions opts_;
  const DeviceInfo& dev_;
  DeviceCaps caps_;
};

}  // namespace

std::shared_ptr<const Backend> backend(const CudaOptions& options) {
  return std::make_shared<CudaBackend>(options);
}

}  // namespace luminal::cuda
