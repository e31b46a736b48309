// GraphTensor construction, marking (output, output_into, persist) and the helpers shared by the
// op families.
#include <stdexcept>

#include <fmt/format.h>

#include "core/tensor/helpers.h"

namespace luminal {

GraphTensor::GraphTensor(Graph* g, NodeId node) : graph(g), id(node) {
  if (g == nullptr || node >= g->size()) {
    throw std::invalid_argument(fmt::format("[tensor] node {} does not exist in this graph", node));
  }
  const Node& n = g->node(node);
  view = ShapeTracker::contiguous(n.shape);
  dtype = n.dtype;
}

GraphTensor& GraphTensor::output() {
  Graph& g = detail::graph_of(*this, "output");
  Node n;
  n.kind = OpKind::Output;
  n.dtype = dtype;
  n.shape = dims();
  n.inputs.push_back({id, view});
  *this = GraphTensor(&g, g.add_node(std::move(n)));
  return *this;
}

GraphTensor& GraphTensor::output_into(const GraphTensor& state) {
  Graph& g = detail::graph_of(*this, "output_into");
  if (state.graph != &g)
    throw std::invalid_argument("[output_into] the state tensor belongs to another graph");
  const Node& s = g.node(state.id);
  const bool whole = state.view.is_contiguous() && same_exprs(state.dims(), s.shape);
  if (s.kind != OpKind::Input || !whole) {
    throw std::invalid_argument(fmt::format(
        "[output_into] state must be a whole Input tensor, got node {} ({})", state.id,
        op_name(s.kind)));
  }
  if (s.dtype != dtype || !same_exprs(s.shape, dims())) {
    throw std::invalid_argument(fmt::format(
        "[output_into] input '{}' is {} {}, the value is {} {}", s.name, dtype_name(s.dtype),
        shape_string(s.shape), dtype_name(dtype), shape_string(dims())));
  }
  for (NodeId o : g.outputs()) {
    if (g.node(o).writes_into == int64_t(state.id))
      throw std::invalid_argument(
          fmt::format("[output_into] input '{}' already has a next value (node {})", s.name, o));
  }
  g.node_mut(state.id).persist = true;
  output();
  g.node_mut(id).writes_into = int64_t(state.id);
  return *this;
}

GraphTensor& GraphTensor::persist() {
  Graph& g = detail::graph_of(*this, "persist");
  Node& n = g.node_mut(id);
  if (n.kind != OpKind::Input) {
    throw std::invalid_argument(fmt::format(
        "[persist] only Input nodes can be persisted; node {} is a {}", id, op_name(n.kind)));
  }
  n.persist = true;
  return *this;
}

namespace detail {

Graph& graph_of(const GraphTensor& t, std::string_view op) {
  if (t.graph == nullptr) {
    throw std::invalid_argument(fmt::format("[{}] tensor is not attached to a graph", op));
  }
  return *t.graph;
}

void check_same_graph(std::string_view op, const GraphTensor& a, const GraphTensor& b) {
  if (&graph_of(a, op) != &graph_of(b, op)) {
    throw std::invalid_argument(fmt::format("[{}] operands belong to different graphs", op));
  }
}

void check_same_dtype(std::string_view op, const GraphTensor& a, const GraphTensor& b) {
  if (a.dtype != b.dtype) {
    throw std::invalid_argument(
        fmt::format("[{}] dtype mismatch: {} vs {}", op, dtype_name(a.dtype), dtype_name(b.dtype)));
  }
}

void require_float(std::string_view op, const GraphTensor& t) {
  if (!is_float(t.dtype)) {
    throw std::invalid_argument(
        fmt::format("[{}] requires a float dtype, got {}", op, dtype_name(t.dtype)));
  }
}

int normalize_axis(std::string_view op, int axis, int rank) {
  int a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    throw std::invalid_argument(
        fmt::format("[{}] axis {} out of range for rank {}", op, axis, rank));
  }
  return a;
}

int normalize_insert_axis(std::string_view op, int axis, int rank) {
  int a = axis < 0 ? axis + rank + 1 : axis;
  if (a < 0 || a > rank) {
    throw std::invalid_argument(
        fmt::format("[{}] insertion axis {} out of range for rank {}", op, axis, rank));
  }
  return a;
}

bool dim_padded(const ShapeTracker& v, size_t i) {
  bool lo = i < v.pad_lo.size() && v.pad_lo[i].as_const() != 0;
  bool hi = i < v.pad_hi.size() && v.pad_hi[i].as_const() != 0;
  return lo || hi;
}

GraphTensor make_node(OpKind kind, DType dtype, const std::vector<GraphTensor>& inputs,
                      std::vector<Expr> shape, int axis) {
  Graph& g = *inputs.at(0).graph;
  Node n;
  n.kind = kind;
  n.dtype = dtype;
  n.shape = std::move(shape);
  n.axis = axis;
  for (const GraphTensor& t : inputs) n.inputs.push_back({t.id, t.view});
  return GraphTensor(&g, g.add_node(std::move(n)));
}

GraphTensor unary(OpKind kind, const GraphTensor& x, DType dtype) {
  graph_of(x, op_name(kind));
  return make_node(kind, dtype, {x}, x.dims());
}

GraphTensor scalar_like(const GraphTensor& t, double v) { return scalar_like(t, v, t.dtype); }

GraphTensor scalar_like(const GraphTensor& t, double v, DType dtype) {
  GraphTensor c = graph_of(t, "constant").constant(v, dtype);
  for (int i = 0; i < t.rank(); ++i) c.view = c.view.expand(i, t.dims()[i]);
  return c;
}

GraphTensor unreduce(const GraphTensor& r, int axis, const Expr& size) {
  GraphTensor out = r;
  out.view = r.view.expand(axis, size);
  return out;
}

}  // namespace detail
}  // namespace luminal
