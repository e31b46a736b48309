// custom_op: a Custom node whose output shape and dtype come from the op's reference decomposition.
#include <stdexcept>

#include <fmt/format.h>

#include "core/tensor/helpers.h"
#include "luminal/custom_op.h"

namespace luminal {

GraphTensor custom_op(std::shared_ptr<const CustomOp> op, const std::vector<GraphTensor>& inputs) {
  if (!op) throw std::invalid_argument("[custom_op] op is null");
  const std::string name = op->name();
  if (inputs.empty()) {
    throw std::invalid_argument(fmt::format("[custom_op] {} needs at least one input", name));
  }
  for (const GraphTensor& t : inputs) detail::check_same_graph("custom_op", inputs[0], t);

  // Decompose once on a scratch graph with inputs of the same dims/dtypes to learn the result type.
  Graph scratch;
  std::vector<GraphTensor> probes;
  for (size_t i = 0; i < inputs.size(); ++i) {
    probes.push_back(
        scratch.named_tensor(fmt::format("in{}", i), inputs[i].dims(), inputs[i].dtype));
  }
  GraphTensor result = op->decompose(scratch, probes);
  if (result.graph != &scratch) {
    throw std::invalid_argument(fmt::format(
        "[custom_op] {}: decompose must return a tensor of the graph it was given", name));
  }

  Graph& g = *inputs[0].graph;
  Node n;
  n.kind = OpKind::Custom;
  n.dtype = result.dtype;
  n.shape = result.dims();
  n.name = name;
  n.custom = std::move(op);
  for (const GraphTensor& t : inputs) n.inputs.push_back({t.id, t.view});
  return GraphTensor(&g, g.add_node(std::move(n)));
}

}  // namespace luminal
