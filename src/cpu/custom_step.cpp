// Custom ops on the CPU: the op's decomposition over the node's input views (symbolic dims stay
// symbolic, as the reference runtime builds it), built once as a CpuPlan of its own (its
// generated kernels fused like any graph's) and run on the parent's buffers in place.
#include <cstring>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "cpu/cpu_plan.h"
#include "luminal/custom_op.h"

namespace luminal::cpu {

struct CpuPlan::Decomposed {
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
  if (!d) {
    d = std::make_shared<Decomposed>();
    d->graph = std::make_unique<Graph>();
    std::vector<GraphTensor> ins;
    std::set<std::string> used;
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      const Node& producer = graph_.node(node.inputs[j].node);
      // Errors inside the decomposition name the outer input ("indices_1") where there is one.
      std::string name = producer.kind == OpKind::Input ? producer.name : "";
      if (name.empty() || !used.insert(name).second) name = fmt::format("custom_in_{}", j);
      ins.push_back(d->graph->named_tensor(name, node.inputs[j].view.dims,
                                           plan_.buffers.at(size_t(c.inputs[j])).dtype));
      d->inputs.push_back(ins.back().id);
    }
    GraphTensor out = node.custom->decompose(*d->graph, ins);
    if (out.dtype != node.dtype)
      throw std::logic_error(fmt::format("[cpu] custom op {}: its decomposition yields {}, the node is {}",
                                         node.custom->name(), dtype_name(out.dtype), dtype_name(node.dtype)));
    out.output();
    d->output = d->graph->outputs().at(0);
    d->plan = std::make_unique<CpuPlan>(opts_, BuildRequest{*d->graph, nullptr, plan_dims_});
  }
  for (size_t j = 0; j < node.inputs.size(); ++j) {
    const DType dt = plan_.buffers.at(size_t(c.inputs[j])).dtype;
    int64_t n = 1;
    for (const Expr& e : node.inputs[j].view.dims) n *= e.eval(dyn);
    std::byte* p = address(c.inputs[j], dyn) + c.input_offsets[j].eval(dyn) * int64_t(dtype_size(dt));
    d->plan->set_device_ptr(d->inputs[j], p, size_t(n) * dtype_size(dt));
  }
  d->plan->set_output_ptr(d->output, address(c.output, dyn), size_t(numel) * dtype_size(node.dtype));
  d->plan->execute(dyn, false);
  error_ |= __atomic_exchange_n(&d->plan->error_, 0, __ATOMIC_RELAXED);
}

CpuPlan::~CpuPlan() = default;

}  // namespace luminal::cpu
