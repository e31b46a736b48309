// The backend-independent half of the runtime contract: argument checks, typed set/get.
#include "luminal/runtime.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>
#include <stdexcept>


namespace luminal {

std::string describe_error_bits(int flag) {
  std::string what;
  auto add = [&](const std::string& part) { what += (what.empty() ? "" : " and ") + part; };
  if (flag & 1) add("an out-of-range gather index");
  if (flag & 2) add("an out-of-range scatter index");
  if (flag & 4)
    add("bad embedding-bag offsets (negative, decreasing or past the indices; in a KeyedJaggedTensor: lengths that "
        "do not sum to its values)");
  if (flag & ~7) add(fmt::format("error bits {:#x}", unsigned(flag & ~7)));
  return what;
}

namespace {

// "'x'" for a named node, else "(node 5, Mul)".
std::string label(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (!n.name.empty()) return fmt::format("'{}'", n.name);
  return fmt::format("(node {}, {})", id, op_name(n.kind));
}

// True when t reads its node's whole output in row-major order (not a permuted/sliced view).
bool is_whole_node(const GraphTensor& t, const Node& n) {
  return t.view.is_contiguous() && same_exprs(t.view.dims, n.shape);
}

void check_graph(const Graph& g, const GraphTensor& t, const char* op) {
  if (t.graph != &g || t.id >= g.size()) {
    throw std::invalid_argument(
        fmt::format("[{}] tensor (node {}) does not belong to this runtime's graph", op, t.id));
  }
}

// Number of elements of a fully static shape, or -1 when a dim is symbolic.
int64_t static_numel(const Node& n) {
  int64_t count = 1;
  for (const Expr& d : n.shape) {
    std::optional<int64_t> c = d.as_const();
    if (!c) return -1;
    count *= *c;
  }
  return count;
}

// Early size check for static shapes (symbolic ones are checked at execute()).
void check_bytes(const Graph& g, NodeId id, size_t bytes, const char* op) {
  const Node& n = g.node(id);
  const size_t esize = dtype_size(n.dtype);
  if (bytes % esize != 0) {
    throw std::invalid_argument(
        fmt::format("[{}] tensor {} is {}: {} bytes is not a whole number of elements", op,
                    label(g, id), dtype_name(n.dtype), bytes));
  }
  const int64_t want = static_numel(n);
  if (want >= 0 && static_cast<int64_t>(bytes / esize) != want) {
    throw std::invalid_argument(fmt::format("[{}] tensor {} has shape {} ({} elements), got {}", op,
                                            label(g, id), shape_string(n.shape), want,
                                            bytes / esize));
  }
}

}  // namespace

NodeId Runtime::input_node(const GraphTensor& t, const char* op) const {
  check_graph(graph_, t, op);
  const Node& n = graph_.node(t.id);
  if (n.kind != OpKind::Input) {
    throw std::invalid_argument(
        fmt::format("[{}] tensor {} is not an Input", op, label(graph_, t.id)));
  }
  if (!is_whole_node(t, n)) {
    throw std::invalid_argument(
        fmt::format("[{}] tensor is a view of input {}; bind data to the input tensor itself", op,
                    label(graph_, t.id)));
  }
  return t.id;
}

NodeId Runtime::result_node(const GraphTensor& t, const char* op) const {
  check_graph(graph_, t, op);
  const Node& n = graph_.node(t.id);
  if (n.kind != OpKind::Output && n.kind != OpKind::Input) {
    throw std::invalid_argument(
        fmt::format("[{}] tensor (node {}, {}) is not an output; call .output() on it", op, t.id,
                    op_name(n.kind)));
  }
  if (!is_whole_node(t, n)) {
    throw std::invalid_argument(fmt::format(
        "[{}] tensor is a view of node {}; call .output() on the view itself", op, t.id));
  }
  if (n.writes_into >= 0) {
    throw std::invalid_argument(fmt::format(
        "[{}] output (node {}) is the next value of input {} (output_into): read that input",
        op, t.id, label(graph_, NodeId(n.writes_into))));
  }
  return t.id;
}

void Runtime::unbind_noexcept(NodeId input) noexcept {
  try {
    (void)remove_buffer(GraphTensor(const_cast<Graph*>(&graph_), input));
  } catch (...) {
    // An input without data has nothing to drop.
  }
}

namespace {
void check_dtype(const Graph& g, NodeId id, DType got) {
  const DType want = g.node(id).dtype;
  // Bool data travels as uint8 0/1.
  if (want == got || (want == DType::Bool && got == DType::U8)) return;
  throw std::invalid_argument(fmt::format("[set_data] tensor {} is {}, got {} data", label(g, id),
                                          dtype_name(want), dtype_name(got)));
}
}  // namespace

#define LUMINAL_SET_DATA(T, DT)                                        \
  void Runtime::set_data(const GraphTensor& t, std::span<const T> v) { \
    const NodeId id = input_node(t, "set_data");                       \
    check_dtype(graph_, id, DT);                                       \
    check_bytes(graph_, id, v.size_bytes(), "set_data");               \
    upload(id, std::as_bytes(v), graph_.node(id).persist);             \
  }
LUMINAL_SET_DATA(float, DType::F32)
LUMINAL_SET_DATA(double, DType::F64)
LUMINAL_SET_DATA(f16, DType::F16)
LUMINAL_SET_DATA(bf16, DType::BF16)
LUMINAL_SET_DATA(int32_t, DType::I32)
LUMINAL_SET_DATA(int64_t, DType::I64)
LUMINAL_SET_DATA(uint8_t, DType::U8)
LUMINAL_SET_DATA(int8_t, DType::I8)
#undef LUMINAL_SET_DATA

void Runtime::set_bytes(const GraphTensor& t, std::span<const std::byte> bytes) {
  const NodeId id = input_node(t, "set_bytes");
  check_bytes(graph_, id, bytes.size(), "set_bytes");
  upload(id, bytes, graph_.node(id).persist);
}

void Runtime::set_zeros(const GraphTensor& t, size_t bytes) {
  const NodeId id = input_node(t, "set_zeros");
  check_bytes(graph_, id, bytes, "set_zeros");
  const std::vector<std::byte> zeros(bytes);
  upload(id, zeros, graph_.node(id).persist);
}

void Runtime::set_device_ptr(const GraphTensor& t, void* ptr, size_t bytes) {
  (void)t;
  (void)ptr;
  (void)bytes;
  throw std::runtime_error("[set_device_ptr] not supported by this runtime");
}

std::vector<float> Runtime::get_f32(const GraphTensor& t) {
  const NodeId id = result_node(t, "get_f32");
  const DType dt = graph_.node(id).dtype;
  if (!is_float(dt)) {
    throw std::invalid_argument(
        fmt::format("[get_f32] tensor {} is {}", label(graph_, id), dtype_name(dt)));
  }
  const std::vector<std::byte> bytes = get_bytes(t);
  const size_t n = bytes.size() / dtype_size(dt);
  std::vector<float> out(n);
  for (size_t i = 0; i < n; ++i) {
    const std::byte* p = bytes.data() + i * dtype_size(dt);
    if (dt == DType::F32) {
      std::memcpy(&out[i], p, 4);
    } else if (dt == DType::F64) {
      double d;
      std::memcpy(&d, p, 8);
      out[i] = static_cast<float>(d);
    } else {
      uint16_t bits;
      std::memcpy(&bits, p, 2);
      out[i] = dt == DType::F16 ? f16_bits_to_f32(bits) : bf16_bits_to_f32(bits);
    }
  }
  return out;
}

namespace {
template <class T>
std::vector<T> get_exact(Runtime& rt, const Graph& g, NodeId id, const GraphTensor& t, DType want,
                         const char* op) {
  const DType dt = g.node(id).dtype;
  if (dt != want) {
    throw std::invalid_argument(
        fmt::format("[{}] tensor {} is {}", op, label(g, id), dtype_name(dt)));
  }
  const std::vector<std::byte> bytes = rt.get_bytes(t);
  std::vector<T> out(bytes.size() / sizeof(T));
  std::memcpy(out.data(), bytes.data(), out.size() * sizeof(T));
  return out;
}
}  // namespace

std::vector<int32_t> Runtime::get_i32(const GraphTensor& t) {
  return get_exact<int32_t>(*this, graph_, result_node(t, "get_i32"), t, DType::I32, "get_i32");
}

std::vector<int64_t> Runtime::get_i64(const GraphTensor& t) {
  return get_exact<int64_t>(*this, graph_, result_node(t, "get_i64"), t, DType::I64, "get_i64");
}

}  // namespace luminal
