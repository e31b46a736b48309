// Reference kernel for Custom nodes: the op's decomposition, built once into a scratch graph whose
// inputs mirror the node's input views, and run by a nested ReferenceRuntime.
#include <set>
#include <string>

#include <fmt/format.h>

#include <stdexcept>

#include "luminal/custom_op.h"
#include "reference/kernels.h"

namespace luminal::reference {

namespace {

std::unique_ptr<CustomScratch> build_scratch(const KernelContext& k) {
  auto s = std::make_unique<CustomScratch>();
  s->graph = std::make_unique<Graph>();
  std::vector<GraphTensor> args;
  std::set<std::string> used;
  for (size_t i = 0; i < k.node.inputs.size(); ++i) {
    const NodeInput& in = k.node.inputs[i];
    const Node& producer = k.graph.node(in.node);
    // Errors inside the decomposition name the outer input ("indices_1") where there is one.
    std::string name = producer.kind == OpKind::Input && !producer.name.empty() ? producer.name : "";
    if (name.empty() || !used.insert(name).second) name = fmt::format("custom_in_{}", i);
    // Symbolic dims stay symbolic, so one scratch graph serves every DynMap.
    args.push_back(s->graph->named_tensor(name, in.view.dims, producer.dtype));
  }
  s->inputs = args;
  s->result = k.node.custom->decompose(*s->graph, args);
  s->result.output();
  s->runtime = std::make_unique<ReferenceRuntime>(*s->graph);
  return s;
}

// The operand's logical elements as a contiguous row-major buffer in its dtype.
std::vector<std::byte> materialize(const Operand& a) {
  const auto size = static_cast<int64_t>(dtype_size(a.dtype()));
  std::vector<std::byte> bytes(static_cast<size_t>(numel_of(a.view.dims) * size));
  for_each_index(a.view.dims, [&](std::span<const int64_t> idx, int64_t i) {
    a.copy_element(idx, bytes.data() + i * size);
  });
  return bytes;
}

}  // namespace

void run_custom(const KernelContext& k, CustomCache& cache) {
  if (!k.node.custom)
    throw std::runtime_error(fmt::format("[cpu] {}: no custom op attached", k.where()));
  std::unique_ptr<CustomScratch>& s = cache[k.id];
  if (!s) s = build_scratch(k);

  for (size_t i = 0; i < k.in.size(); ++i) {
    const std::vector<std::byte> bytes = materialize(k.in[i]);
    s->runtime->set_bytes(s->inputs[i], bytes);
  }
  try {
    s->runtime->execute(k.dyn);
  } catch (const std::exception& e) {
    throw std::runtime_error(
        fmt::format("[custom] {} '{}': {}", k.where(), k.node.custom->name(), e.what()));
  }
  std::vector<std::byte> result = s->runtime->get_bytes(s->result);
  const std::vector<int64_t> dims = eval_all(s->result.dims(), k.dyn);
  if (s->result.dtype != k.out.dtype || dims != k.out.dims || result.size() != k.out.bytes.size()) {
    throw std::runtime_error(
        fmt::format("[custom] {} '{}': decomposition gives {} {}, node expects {} {}", k.where(),
                    k.node.custom->name(), dims_string(dims), dtype_name(s->result.dtype),
                    dims_string(k.out.dims), dtype_name(k.out.dtype)));
  }
  k.out.bytes = std::move(result);
}

}  // namespace luminal::reference
