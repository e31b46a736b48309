// Custom ops on the CPU: the op's host kernel where it has one (CustomOp::host_kernel), else its
// decomposition over the node's input views (symbolic dims stay symbolic, as the reference
// runtime builds it), built once as a CpuPlan of its own (its generated kernels fused like any
// graph's) and run on the parent's buffers in place.
#include <cstring>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "cpu/cpu_plan.h"
#include "cpu/host_cross_gemm.h"
#include "luminal/custom_op.h"

namespace luminal::cpu {

struct CpuPlan::Decomposed {
  std::vector<std::vector<int64_t>> kernel_dims;  // the dims host_kernel was asked for
  std::optional<HostKernel> kernel;
  std::unique_ptr<HostCrossGemm> cross;  // CrossGemm's kernel (the backend's oneDNN, with packing)
  bool asked = false;
  std::unique_ptr<Graph> graph;
  std::unique_ptr<CpuPlan> plan;
  std::vector<NodeId> inputs;
  NodeId output = 0;
};

void CpuPlan::run_custom(size_t step, const compiler::CustomStep& c, const DynMap& dyn) {
  const Node& node = graph_.node(c.node);
  int64_t numel = 1;
  for (const Expr& e : node.shape) numel *= e.eval(dyn);
  if (numel == 0) return;
  if (custom_.size() < plan_.steps.size()) custom_.resize(plan_.steps.size());
  std::shared_ptr<Decomposed>& d = custom_[step];
  if (!d) d = std::make_shared<Decomposed>();
  std::vector<std::vector<int64_t>> dims;
  std::vector<DType> dtypes;
  std::vector<const void*> ins;
  std::vector<int64_t> counts;
  for (size_t j = 0; j < node.inputs.size(); ++j) {
    std::vector<int64_t> dj;
    int64_t n = 1;
    for (const Expr& e : node.inputs[j].view.dims) n *= dj.emplace_back(e.eval(dyn));
    dims.push_back(std::move(dj));
    dtypes.push_back(plan_.buffers.at(size_t(c.inputs[j])).dtype);
    ins.push_back(ptrs_[size_t(c.inputs[j])] + c.input_offsets[j].eval(dyn) * int64_t(dtype_size(dtypes.back())));
    counts.push_back(n);
  }
  if (!d->asked || d->kernel_dims != dims) {
    d->asked = true;
    d->kernel_dims = dims;
    // CrossGemm's GEMM is oneDNN's (a backend library, which src/custom cannot call).
    const auto* cross = dynamic_cast<const custom::CrossGemm*>(node.custom.get());
    if (cross != nullptr) d->cross = HostCrossGemm::make(*cross, dims, dtypes[0], packs_.get());
    else d->kernel = node.custom->host_kernel(KernelRequest{dims, dtypes, caps_});
  }
  if (d->cross) {
    d->cross->run(HostKernelArgs{ins, counts, ptrs_[size_t(c.output)], &error_}, versions_[size_t(c.inputs[1])]);
    return;
  }
  if (d->kernel) {
    (*d->kernel)(HostKernelArgs{ins, counts, ptrs_[size_t(c.output)], &error_});
    return;
  }
  if (!d->plan) {
    d->graph = std::make_unique<Graph>();
    std::vector<GraphTensor> args;
    std::set<std::string> used;
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      const Node& producer = graph_.node(node.inputs[j].node);
      // Errors inside the decomposition name the outer input ("indices_1") where there is one.
      std::string name = producer.kind == OpKind::Input ? producer.name : "";
      if (name.empty() || !used.insert(name).second) name = fmt::format("custom_in_{}", j);
      args.push_back(d->graph->named_tensor(name, node.inputs[j].view.dims, dtypes[j]));
      d->inputs.push_back(args.back().id);
    }
    GraphTensor out = node.custom->decompose(*d->graph, args);
    if (out.dtype != node.dtype)
      throw std::logic_error(fmt::format("[cpu] custom op {}: its decomposition yields {}, the node is {}",
                                         node.custom->name(), dtype_name(out.dtype), dtype_name(node.dtype)));
    out.output();
    d->output = d->graph->outputs().at(0);
    d->plan = std::make_unique<CpuPlan>(opts_, caps_, BuildRequest{*d->graph, nullptr, plan_dims_});
  }
  for (size_t j = 0; j < node.inputs.size(); ++j) {
    d->plan->set_device_ptr(d->inputs[j], const_cast<void*>(ins[j]), size_t(counts[j]) * dtype_size(dtypes[j]));
    d->plan->inputs_[d->inputs[j]].version = versions_[size_t(c.inputs[j])];  // constant weights stay constant
  }
  d->plan->set_output_ptr(d->output, ptrs_[size_t(c.output)], size_t(numel) * dtype_size(node.dtype));
  d->plan->execute(dyn, false);
  error_ |= __atomic_exchange_n(&d->plan->error_, 0, __ATOMIC_RELAXED);
}

bool CpuPlan::custom_has_kernel(size_t step) const { return custom_[step]->kernel || custom_[step]->cross; }

CpuPlan::~CpuPlan() = default;

}  // namespace luminal::cpu
