// ReferenceRuntime: walks the graph in creation order, one host buffer per node, plain kernels per op.
#include "luminal/reference.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <optional>
#include <stdexcept>

#include "reference/kernels.h"

namespace luminal {

using reference::HostTensor;

/// Per-node host buffers (Inputs: bound data; Outputs: last results) and input persistence.
struct ReferenceRuntime::State {
  std::vector<std::optional<HostTensor>> bufs;
  std::vector<bool> persisted;
  reference::CustomCache custom;
  /// Grows the tables when the graph gained nodes after construction.
  void fit(size_t n) {
    if (bufs.size() < n) bufs.resize(n);
    if (persisted.size() < n) persisted.resize(n, false);
  }
};

namespace {

// Ancestors of Output nodes (creation order is topological, so one backward pass suffices).
std::vector<bool> needed_nodes(const Graph& g) {
  std::vector<bool> need(g.size(), false);
  for (size_t i = g.size(); i-- > 0;) {
    if (g.node(static_cast<NodeId>(i)).kind == OpKind::Output) need[i] = true;
    if (!need[i]) continue;
    for (const NodeInput& in : g.node(static_cast<NodeId>(i)).inputs) need[in.node] = true;
  }
  return need;
}

std::string node_desc(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  return n.name.empty() ? fmt::format("node {} ({})", id, op_name(n.kind))
                        : fmt::format("node {} ({} '{}')", id, op_name(n.kind), n.name);
}

// "[batch=4, 3]": symbolic dims show their value at this DynMap.
std::string bound_shape(const std::vector<Expr>& shape, const std::vector<int64_t>& dims) {
  std::vector<std::string> parts;
  for (size_t d = 0; d < shape.size(); ++d) {
    parts.push_back(shape[d].as_const() ? std::to_string(dims[d])
                                        : fmt::format("{}={}", shape[d].to_string(), dims[d]));
  }
  return fmt::format("[{}]", fmt::join(parts, ", "));
}

std::vector<int64_t> eval_shape(const Graph& g, NodeId id, const DynMap& dyn) {
  const Node& n = g.node(id);
  try {
    return eval_all(n.shape, dyn);
  } catch (const std::exception& e) {
    throw std::runtime_error(fmt::format("[execute] {} shape {}: {}", node_desc(g, id),
                                         shape_string(n.shape), e.what()));
  }
}

// Buffer hand-over: a Scatter's destination or an Output's source whose buffer dies at this node
// (a consumed input, or an intermediate this node reads last) and that it reads whole and in
// order becomes the node's buffer instead of being copied. KV caches moved out with remove_buffer
// and back with set_buffer are then updated in place, with no copy per step.
// A state input (output_into) is persisted but gets its next value at the end, so its buffer may
// be taken too: that is the in-place KV-cache update.
bool can_take_buffer(const Graph& g, const Node& n, const reference::Operand& op,
                     const std::vector<int>& pending, const std::vector<bool>& persisted,
                     const std::vector<bool>& is_state) {
  if (n.kind != OpKind::Scatter && n.kind != OpKind::Output) return false;
  const NodeId src = n.inputs[0].node;
  int reads = 0;
  for (const NodeInput& in : n.inputs) reads += in.node == src ? 1 : 0;
  const Node& p = g.node(src);
  const bool dies =
      p.kind == OpKind::Input ? !persisted[src] || is_state[src] : p.kind != OpKind::Output;
  return dies && reads == 1 && pending[src] == 1 && op.dtype() == n.dtype &&
         op.view.is_contiguous() && op.view.numel() == op.src->numel();
}

void run_kernel(const reference::KernelContext& k, reference::CustomCache& cache) {
  static_assert(kOpCount == 19, "ops.def changed: add the new op to the CPU dispatch");
  switch (k.node.kind) {
    case OpKind::Input:
      throw std::logic_error("[cpu] Input is not a kernel");
    case OpKind::SumReduce:
    case OpKind::MaxReduce:
      return reference::run_reduce(k);
    case OpKind::Gather:
      return reference::run_gather(k);
    case OpKind::Scatter:
      return reference::run_scatter(k);
    case OpKind::Custom:
      return reference::run_custom(k, cache);
    default:
      return reference::run_elementwise(k);
  }
}

}  // namespace

ReferenceRuntime::ReferenceRuntime(const Graph& g) : Runtime(g), state_(std::make_unique<State>()) {}

ReferenceRuntime::~ReferenceRuntime() = default;

void ReferenceRuntime::upload(NodeId input, std::span<const std::byte> bytes, bool persist) {
  State& s = *state_;
  s.fit(graph_.size());
  s.bufs[input] = HostTensor{{bytes.begin(), bytes.end()}, {}, graph_.node(input).dtype};
  s.persisted[input] = persist;
}

bool ReferenceRuntime::has_data(NodeId input) const {
  return input < state_->bufs.size() && state_->bufs[input].has_value();
}

bool ReferenceRuntime::persisted(NodeId input) const {
  return input < state_->persisted.size() && state_->persisted[input];
}

bool ReferenceRuntime::inputs_ready() const {
  const std::vector<bool> need = needed_nodes(graph_);
  for (NodeId id = 0; id < graph_.size(); ++id)
    if (need[id] && graph_.node(id).kind == OpKind::Input && !has_data(id)) return false;
  return true;
}

void ReferenceRuntime::execute(const DynMap& dyn) { execute(dyn, true); }

void ReferenceRuntime::execute(const DynMap& dyn, bool consume) {
  State& s = *state_;
  const Graph& g = graph_;
  s.fit(g.size());
  for (NodeId id : g.outputs()) s.bufs[id].reset();  // results are readable until the next execute

  const std::vector<bool> need = needed_nodes(g);
  std::vector<std::vector<int64_t>> dims(g.size());
  std::vector<int> pending(g.size(), 0);  // unexecuted consumers; frees intermediates early
  std::vector<bool> is_state(g.size(), false);  // Inputs an Output writes into (output_into)
  // Inputs whose buffers outlive this run (not consumed): no node may take them over.
  std::vector<bool> keep = s.persisted;
  if (!consume) keep.assign(g.size(), true);
  for (NodeId o : g.outputs())
    if (g.node(o).writes_into >= 0) is_state[size_t(g.node(o).writes_into)] = true;
  for (NodeId id = 0; id < g.size(); ++id) {
    if (!need[id]) continue;
    dims[id] = eval_shape(g, id, dyn);
    for (const NodeInput& in : g.node(id).inputs) ++pending[in.node];
    const Node& n = g.node(id);
    if (n.kind != OpKind::Input) continue;
    if (!s.bufs[id]) {
      throw std::runtime_error(
          fmt::format("[execute] input '{}' has no data (set_data/load_safetensors not called, or "
                      "consumed by a "
                      "previous execute)",
                      n.name));
    }
    const size_t want = static_cast<size_t>(reference::numel_of(dims[id])) * dtype_size(n.dtype);
    if (s.bufs[id]->bytes.size() != want) {
      throw std::runtime_error(fmt::format(
          "[execute] input '{}' has {} bytes, shape {} {} needs {}", n.name,
          s.bufs[id]->bytes.size(), bound_shape(n.shape, dims[id]), dtype_name(n.dtype), want));
    }
    s.bufs[id]->dims = dims[id];
  }

  try {
    for (NodeId id = 0; id < g.size(); ++id) {
      const Node& n = g.node(id);
      if (!need[id] || n.kind == OpKind::Input) continue;
      HostTensor out{{}, dims[id], n.dtype};
      reference::KernelContext k{g, id, n, {}, out, dyn};
      for (const NodeInput& in : n.inputs) {
        k.in.push_back(reference::Operand{&*s.bufs[in.node], in.view.resolve(dyn), in.node});
      }
      if (!k.in.empty() && can_take_buffer(g, n, k.in[0], pending, keep, is_state)) {
        // A consumed input taken here is gone if execute throws: set it again before retrying.
        out.bytes = std::move(s.bufs[n.inputs[0].node]->bytes);
        s.bufs[n.inputs[0].node].reset();
        k.in[0].src = &out;
        k.dest_in_out = true;
        if (n.kind == OpKind::Scatter) run_kernel(k, s.custom);
      } else {
        out.bytes.resize(static_cast<size_t>(reference::numel_of(dims[id])) * dtype_size(n.dtype));
        run_kernel(k, s.custom);
      }
      s.bufs[id] = std::move(out);
      for (const NodeInput& in : n.inputs) {
        const OpKind pk = g.node(in.node).kind;
        if (--pending[in.node] == 0 && pk != OpKind::Input && pk != OpKind::Output)
          s.bufs[in.node].reset();
      }
    }
  } catch (...) {
    // Leave no stale results; bound inputs stay so the caller can fix the problem and retry.
    for (NodeId id = 0; id < g.size(); ++id) {
      if (g.node(id).kind != OpKind::Input) s.bufs[id].reset();
    }
    throw;
  }

  // States take their next values (the Output's buffer moves; nothing is copied).
  for (NodeId o : g.outputs()) {
    const int64_t into = g.node(o).writes_into;
    if (into < 0) continue;
    s.bufs[size_t(into)] = std::move(s.bufs[o]);  // same shape (output_into checked it)
    s.bufs[o].reset();
  }
  // Consumed-input semantics: owned inputs that are not persisted are freed.
  for (NodeId id = 0; consume && id < g.size(); ++id) {
    if (g.node(id).kind == OpKind::Input && !s.persisted[id]) s.bufs[id].reset();
  }
}

std::vector<std::byte> ReferenceRuntime::get_bytes(const GraphTensor& t) {
  const NodeId id = result_node(t, "get");
  state_->fit(graph_.size());
  const std::optional<HostTensor>& b = state_->bufs[id];
  if (!b) {
    if (graph_.node(id).kind == OpKind::Output) {
      throw std::runtime_error(
          fmt::format("[get] output (node {}) has not been computed; call execute() first", id));
    }
    throw std::runtime_error(fmt::format("[get] input '{}' has no data", graph_.node(id).name));
  }
  return b->bytes;
}

namespace {

// Deleter type that marks a Buffer as made by this runtime (std::get_deleter finds it), so a
// buffer from another backend is refused instead of being misread.
struct CpuBufferDeleter {
  void operator()(std::vector<std::byte>* v) const noexcept { delete v; }
};

}  // namespace

Buffer ReferenceRuntime::remove_buffer(const GraphTensor& t) {
  const NodeId id = result_node(t, "remove_buffer");
  State& s = *state_;
  s.fit(graph_.size());
  if (!s.bufs[id]) {
    throw std::runtime_error(
        fmt::format("[remove_buffer] {} has no buffer", node_desc(graph_, id)));
  }
  std::shared_ptr<std::vector<std::byte>> vec(
      new std::vector<std::byte>(std::move(s.bufs[id]->bytes)), CpuBufferDeleter{});
  s.bufs[id].reset();
  Buffer b;
  b.bytes = vec->size();
  b.dtype = graph_.node(id).dtype;
  b.impl = std::move(vec);
  return b;
}

void ReferenceRuntime::set_buffer(const GraphTensor& t, Buffer b) {
  const NodeId id = input_node(t, "set_buffer");
  const Node& n = graph_.node(id);
  if (!b)
    throw std::invalid_argument(fmt::format("[set_buffer] empty buffer for input '{}'", n.name));
  if (b.dtype != n.dtype) {
    throw std::invalid_argument(fmt::format("[set_buffer] tensor '{}' is {}, buffer is {}", n.name,
                                            dtype_name(n.dtype), dtype_name(b.dtype)));
  }
  // CPU buffers hold a std::vector<std::byte> with CpuBufferDeleter (see remove_buffer).
  if (std::get_deleter<CpuBufferDeleter>(b.impl) == nullptr) {
    throw std::invalid_argument(
        fmt::format("[set_buffer] input '{}': not a CPU runtime buffer", n.name));
  }
  auto vec = std::static_pointer_cast<std::vector<std::byte>>(b.impl);
  if (vec->size() != b.bytes) {
    throw std::invalid_argument(
        fmt::format("[set_buffer] input '{}': not a CPU runtime buffer", n.name));
  }
  State& s = *state_;
  s.fit(graph_.size());
  // Take the bytes when nobody else holds the buffer, else copy.
  std::vector<std::byte> bytes = b.impl.use_count() <= 2 ? std::move(*vec) : *vec;
  s.bufs[id] = HostTensor{std::move(bytes), {}, n.dtype};
  s.persisted[id] = n.persist;
}

std::vector<std::string> ReferenceRuntime::host_ops() const {
  const std::vector<bool> need = needed_nodes(graph_);
  std::vector<int> count(kOpCount, 0);
  for (NodeId id = 0; id < graph_.size(); ++id) {
    if (need[id] && graph_.node(id).kind != OpKind::Input)
      ++count[static_cast<int>(graph_.node(id).kind)];
  }
  std::vector<std::string> ops;
  for (int k = 0; k < kOpCount; ++k) {
    if (count[k] > 0)
      ops.push_back(fmt::format("cpu:{} x{}", op_name(static_cast<OpKind>(k)), count[k]));
  }
  return ops;
}

}  // namespace luminal
