// The HLIR graph: an append-only list of primitive op nodes (creation order is a topological order).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/dtype.h"
#include "luminal/expr.h"
#include "luminal/shape.h"

namespace luminal {

/// Primitive op kinds, generated from ops.def.
enum class OpKind : uint8_t {
#define LUMINAL_OP(name) name,
#include "luminal/ops.def"
#undef LUMINAL_OP
};

/// Number of primitive ops; a static_assert next to every hand-written per-op table checks it.
inline constexpr int kOpCount = 0
#define LUMINAL_OP(name) +1
#include "luminal/ops.def"
#undef LUMINAL_OP
    ;
static_assert(kOpCount == 19, "ops.def changed: update the per-op tables (grep kOpCount)");

/// The op's name as written in ops.def ("SumReduce").
std::string_view op_name(OpKind k);

/// Index of a node in its graph.
using NodeId = uint32_t;

class CustomOp;
class Graph;
class GraphTensor;

/// One input edge: the producer node and the view through which this node reads it.
struct NodeInput {
  NodeId node;
  ShapeTracker view;
};

/// One primitive op. Its output is a contiguous row-major buffer of `shape` x `dtype`.
///
/// Semantics per kind (inputs read through their views, all of the output's rank unless noted):
///   Input      named external tensor; no inputs
///   Output     copy of inputs[0] (marks a result; with writes_into, the next value of that Input)
///   Constant   scalar `value` (shape [])
///   Iota       out[i] = i, shape [n]
///   Cast       convert inputs[0] to `dtype`
///   Exp2 Log2 Sin Sqrt Recip   elementwise unary
///   Add Mul Mod LessThan       elementwise binary on equal dtypes (LessThan yields Bool)
///   Gather     out[i..., j...] = data[idx[i...], j...]; inputs: data, idx (I32/I64)
///   Scatter    out = dest with out[idx[n], j...] = src[n, j...]; inputs: dest, idx, src
///   SumReduce MaxReduce        reduce inputs[0] over `axis`, which is removed
///   Custom     `custom` op on any inputs
struct Node {
  OpKind kind = OpKind::Input;
  DType dtype = DType::F32;
  std::vector<NodeInput> inputs;
  std::vector<Expr> shape;
  std::string name;        // Input: weight/input label; others: optional debug label
  double value = 0.0;      // Constant
  int axis = -1;           // SumReduce, MaxReduce
  bool persist = false;    // Input: keep the buffer alive across execute()
  int64_t writes_into = -1;  // Output: the Input that takes this result after each execute
                             // (GraphTensor::output_into, a state such as a KV cache), or -1
  std::shared_ptr<const CustomOp> custom;  // Custom
};

/// An append-only graph of primitive ops.
class Graph {
 public:
  Graph() = default;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// A named input of the given shape and dtype; load_safetensors finds it by name.
  GraphTensor named_tensor(std::string name, std::vector<Expr> shape, DType dtype = DType::F32);
  /// A scalar constant (shape []); broadcast it with expand_dim or the arithmetic operators.
  GraphTensor constant(double value, DType dtype = DType::F32);
  /// out[i] = i for i in [0, n).
  GraphTensor arange(Expr n, DType dtype = DType::I32);

  /// Appends a node after checking its inputs exist; returns its id.
  NodeId add_node(Node n);
  /// The node with this id.
  const Node& node(NodeId id) const { return nodes_.at(id); }
  /// Mutable access (persist flags, names).
  Node& node_mut(NodeId id) { return nodes_.at(id); }
  /// All nodes in creation (topological) order.
  const std::vector<Node>& nodes() const { return nodes_; }
  /// Number of nodes.
  size_t size() const { return nodes_.size(); }
  /// The Input node with this name, if any.
  std::optional<NodeId> find_input(std::string_view name) const;
  /// Ids of all Output nodes, in creation order.
  std::vector<NodeId> outputs() const;
  /// For each node, how many later nodes read it.
  std::vector<int> consumer_counts() const;
  /// A readable listing, one node per line (LUMINAL_DEBUG=1 prints it).
  std::string to_string() const;

 private:
  std::vector<Node> nodes_;
};

}  // namespace luminal
