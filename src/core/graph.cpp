// Graph: node storage, the constructors of leaf tensors, queries and the debug listing.
#include "luminal/graph.h"

#include <array>
#include <stdexcept>

#include <fmt/format.h>

#include "luminal/custom_op.h"
#include "luminal/tensor.h"

namespace luminal {

namespace {

constexpr std::array<std::string_view, kOpCount> kOpNames = {
#define LUMINAL_OP(name) #name,
#include "luminal/ops.def"
#undef LUMINAL_OP
};
static_assert(kOpNames.size() == kOpCount, "one name per op in ops.def");

// "%3 [2, 4]" plus the view's strides/offset when the read is not a plain contiguous one.
std::string input_string(const NodeInput& in) {
  std::string s = fmt::format("%{} {}", in.node, shape_string(in.view.dims));
  if (!in.view.is_contiguous()) {
    s += fmt::format(" strides={}", shape_string(in.view.strides));
    if (in.view.offset.as_const() != 0) s += fmt::format(" offset={}", in.view.offset.to_string());
    if (in.view.has_padding()) {
      s += fmt::format(" pad_lo={} pad_hi={}", shape_string(in.view.pad_lo),
                       shape_string(in.view.pad_hi));
    }
  }
  return s;
}

}  // namespace

std::string_view op_name(OpKind k) {
  auto i = static_cast<size_t>(k);
  if (i >= kOpNames.size()) throw std::invalid_argument(fmt::format("[graph] bad op kind {}", i));
  return kOpNames[i];
}

GraphTensor Graph::named_tensor(std::string name, std::vector<Expr> shape, DType dtype) {
  if (name.empty()) throw std::invalid_argument("[named_tensor] input name must not be empty");
  if (find_input(name)) {
    throw std::invalid_argument(fmt::format("[named_tensor] duplicate input name '{}'", name));
  }
  for (const Expr& d : shape) {
    if (auto c = d.as_const(); c && *c < 0) {
      throw std::invalid_argument(
          fmt::format("[named_tensor] '{}' has a negative dim in {}", name, shape_string(shape)));
    }
  }
  Node n;
  n.kind = OpKind::Input;
  n.dtype = dtype;
  n.shape = std::move(shape);
  n.name = std::move(name);
  return GraphTensor(this, add_node(std::move(n)));
}

GraphTensor Graph::constant(double value, DType dtype) {
  Node n;
  n.kind = OpKind::Constant;
  n.dtype = dtype;
  n.value = value;
  return GraphTensor(this, add_node(std::move(n)));
}

GraphTensor Graph::arange(Expr n, DType dtype) {
  if (auto c = n.as_const(); c && *c < 0) {
    throw std::invalid_argument(fmt::format("[arange] negative length {}", *c));
  }
  Node node;
  node.kind = OpKind::Iota;
  node.dtype = dtype;
  node.shape = {std::move(n)};
  return GraphTensor(this, add_node(std::move(node)));
}

NodeId Graph::add_node(Node n) {
  for (const NodeInput& in : n.inputs) {
    if (in.node >= nodes_.size()) {
      throw std::invalid_argument(
          fmt::format("[graph] new {} node reads node {}, but the graph has {} nodes",
                      op_name(n.kind), in.node, nodes_.size()));
    }
  }
  nodes_.push_back(std::move(n));
  return static_cast<NodeId>(nodes_.size() - 1);
}

std::optional<NodeId> Graph::find_input(std::string_view name) const {
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].kind == OpKind::Input && nodes_[i].name == name) return static_cast<NodeId>(i);
  }
  return std::nullopt;
}

std::vector<NodeId> Graph::outputs() const {
  std::vector<NodeId> out;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].kind == OpKind::Output) out.push_back(static_cast<NodeId>(i));
  }
  return out;
}

std::vector<int> Graph::consumer_counts() const {
  std::vector<int> counts(nodes_.size(), 0);
  for (const Node& n : nodes_) {
    for (const NodeInput& in : n.inputs) ++counts[in.node];
  }
  return counts;
}

std::string Graph::to_string() const {
  std::string out;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const Node& n = nodes_[i];
    out += fmt::format("%{} = {}", i, op_name(n.kind));
    if (n.kind == OpKind::Constant) out += fmt::format(" {}", n.value);
    if (n.kind == OpKind::SumReduce || n.kind == OpKind::MaxReduce) {
      out += fmt::format(" axis={}", n.axis);
    }
    if (n.kind == OpKind::Custom && n.custom) out += fmt::format(" <{}>", n.custom->name());
    out += "(";
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      if (j) out += ", ";
      out += input_string(n.inputs[j]);
    }
    out += fmt::format(") -> {} {}", dtype_name(n.dtype), shape_string(n.shape));
    if (!n.name.empty()) out += fmt::format(" '{}'", n.name);
    if (n.persist) out += " persist";
    out += "\n";
  }
  return out;
}

}  // namespace luminal
