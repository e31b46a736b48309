// CudaRuntime: construction and the data-binding half of the runtime contract (upload, device
// pointers, reads, buffer moves). Running the plan lives in plan_exec.cpp.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "cuda/runtime/nvrtc.h"
#include "cuda/runtime/runtime_impl.h"

namespace luminal::cuda {
namespace {

constexpr size_t kPinnedReadMax = size_t{16} << 20;  // larger reads land in pageable memory

}  // namespace

// Byte-count checks shared by set_device_ptr, set_buffer and host_input (symbolic shapes wait for
// execute()).
void check_input_bytes(const Graph& g, NodeId id, size_t bytes, const char* op) {
  const Node& n = g.node(id);
  const size_t esize = dtype_size(n.dtype);
  if (bytes % esize != 0)
    throw std::invalid_argument(
        fmt::format("[{}] tensor '{}' is {}: {} bytes is not a whole number of elements", op,
                    n.name, dtype_name(n.dtype), bytes));
  int64_t want = 1;
  for (const Expr& d : n.shape) {
    std::optional<int64_t> c = d.as_const();
    if (!c) return;
    want *= *c;
  }
  if (static_cast<int64_t>(bytes / esize) != want)
    throw std::invalid_argument(fmt::format("[{}] tensor '{}' has shape {} ({} elements), got {}",
                                            op, n.name, shape_string(n.shape), want,
                                            bytes / esize));
}

// ---- CudaRuntime: forwards to Impl with the device's context current ----

namespace {

// The search runs each candidate several times on the same inputs; a graph that writes its
// inputs (output_into) would see them change between runs, so it is not searched: it takes the
// rules' auto choices (Search::take_auto), or with the search off the heuristic plan.
bool has_states(const Graph& g) {
  for (NodeId o : g.outputs())
    if (g.node(o).writes_into >= 0) return true;
  return false;
}

}  // namespace

// The search state, or nullptr (off). A graph with states gets the rules' auto choices instead
// of a search (Search::take_auto). A bad CudaOptions::candidate is refused here, before the
// device is touched or any weight is loaded.
std::unique_ptr<CudaRuntime::Search> make_search(const Graph& g, const CudaOptions& opts) {
  const bool states = has_states(g);
  if (!opts.candidate.empty()) {
    if (!compiler::search::Candidate::parse(opts.candidate))
      throw std::invalid_argument(
          fmt::format("[search] malformed candidate '{}' (expected key=option,key=option,...)",
                      opts.candidate));
    if (states)
      throw std::invalid_argument(fmt::format(
          "[search] candidate '{}': this graph updates its inputs (output_into), so it runs the "
          "heuristic plan only",
          opts.candidate));
  }
  if (!(opts.search.enabled || !opts.candidate.empty())) return nullptr;
  auto search = std::make_unique<CudaRuntime::Search>(g, opts);
  if (states) search->take_auto(g);
  return search;
}

// The graph the plan runs: the user's, or the rules' rebuilt one for a graph with states.
const Graph& plan_graph(const Graph& user, const CudaRuntime::Search* search) {
  return search && search->active_graph ? *search->active_graph : user;
}

CudaRuntime::CudaRuntime(const Graph& g, CudaOptions opts)
    : Runtime(g), registered_(std::make_unique<Registered>()) {
  if (opts.buckets.enabled()) {  // the first plan is the bucket weights load into (buckets.cpp)
    buckets_ = std::make_unique<Buckets>(g, opts);
    opts = buckets_->options(buckets_->active);
  }
  search_ = make_search(g, opts);
  impl_ = std::make_unique<Impl>(plan_graph(g, search_.get()), opts);
}

CudaRuntime::~CudaRuntime() = default;

void CudaRuntime::upload(NodeId input, std::span<const std::byte> bytes, bool persist) {
  impl_->dev.make_current();
  impl_->upload(active(input), bytes, persist);
}

void CudaRuntime::set_device_ptr(const GraphTensor& t, void* ptr, size_t bytes) {
  const NodeId id = input_node(t, "set_device_ptr");
  impl_->dev.make_current();
  impl_->set_device_ptr(active(id), ptr, bytes);
}

void CudaRuntime::execute(const DynMap& dyn) {
  impl_->dev.make_current();
  select_bucket(dyn);
  ensure_searched(dyn);
  impl_->execute(dyn);
}

std::vector<std::byte> CudaRuntime::get_bytes(const GraphTensor& t) {
  const NodeId id = result_node(t, "get");
  impl_->dev.make_current();
  return impl_->get_bytes(active(id));
}

Buffer CudaRuntime::remove_buffer(const GraphTensor& t) {
  const NodeId id = result_node(t, "remove_buffer");
  impl_->dev.make_current();
  return impl_->remove_buffer(active(id));
}

void CudaRuntime::set_buffer(const GraphTensor& t, Buffer b) {
  const NodeId id = input_node(t, "set_buffer");
  impl_->dev.make_current();
  impl_->set_buffer(active(id), std::move(b));
}

std::vector<std::string> CudaRuntime::host_ops() const { return impl_->labels; }

size_t CudaRuntime::kernel_count() const { return impl_->plan.steps.size(); }

int CudaRuntime::gemv_launches_saved() const { return impl_->gemv_launches_saved; }

int CudaRuntime::graph_streams() const {
  return impl_->graph_exec ? impl_->last_capture_streams : 0;
}

std::vector<double> CudaRuntime::execute_timed(const DynMap& dyn, int iterations) {
  impl_->dev.make_current();
  const Driver& d = drv();
  std::vector<CUevent> events(2 * static_cast<size_t>(std::max(iterations, 0)), nullptr);
  std::vector<double> us(events.size() / 2);
  auto destroy = [&] {
    for (CUevent e : events)
      if (e) d.cuEventDestroy_v2(e);
  };
  try {
    select_bucket(dyn);
    ensure_searched(dyn);
    for (CUevent& e : events) CHECK_CUDA(d.cuEventCreate(&e, CU_EVENT_DEFAULT));
    for (size_t i = 0; i < us.size(); ++i) {
      CHECK_CUDA(d.cuEventRecord(events[2 * i], impl_->stream));
      impl_->execute(dyn);
      CHECK_CUDA(d.cuEventRecord(events[2 * i + 1], impl_->stream));
    }
    impl_->sync_stream();
    for (size_t i = 0; i < us.size(); ++i) {
      float ms = 0;
      CHECK_CUDA(d.cuEventElapsedTime_v2(&ms, events[2 * i], events[2 * i + 1]));
      us[i] = ms * 1e3;
    }
  } catch (...) {
    destroy();
    throw;
  }
  destroy();
  return us;
}

void CudaRuntime::synchronize() {
  impl_->dev.make_current();
  impl_->sync_stream();
}

// ---- Impl: data binding ----

InputSlot& CudaRuntime::Impl::slot(NodeId node) {
  if (inputs.size() <= node) {  // the graph grew after construction
    for (NodeId id = NodeId(inputs.size()); id < graph.size(); ++id)
      if (graph.node(id).kind == OpKind::Input) input_nodes.push_back(id);
    inputs.resize(graph.size());
  }
  return inputs.at(node);
}

std::string CudaRuntime::Impl::node_label(NodeId node) const {
  const Node& n = graph.node(node);
  if (!n.name.empty()) return fmt::format("'{}'", n.name);
  return fmt::format("(node {}, {})", node, op_name(n.kind));
}

void CudaRuntime::Impl::sync_stream() {
  CHECK_CUDA(drv().cuStreamSynchronize(stream));
  staging.stream_synchronized();
  staged_pending = false;
}

void CudaRuntime::Impl::upload(NodeId node, std::span<const std::byte> bytes, bool persist) {
  const size_t n = bytes.size();
  if (!persist && is_staged(node)) {  // into the pinned region; execute() uploads it
    std::byte* p = stage(node, n);
    if (n > 0) std::memcpy(p, bytes.data(), n);
    return;
  }
  InputSlot& s = slot(node);
  // Reuse the slot's memory in place when nobody else holds it: the pointer stays the same, so
  // the captured graph stays valid. Stream order puts this copy after earlier readers.
  const bool reuse = s.owned && s.owned->capacity >= n && s.owned.use_count() == 1;
  if (!reuse) {
    if (s.owned) sync_stream();  // the old block may still be read by queued work
    s.owned = device_alloc(dev, n, fmt::format("input {}", node_label(node)));
    dirty = true;
  }
  if (s.external != 0 || s.staged || s.bytes != n) dirty = true;
  s.external = 0;
  s.staged = false;
  s.has_data = false;  // stays false if the copy below throws
  if (n > 0) staging.upload(s.owned->ptr, bytes.data(), n, stream);
  s.bytes = n;
  s.has_data = true;
  s.persist = persist;
}

void CudaRuntime::Impl::set_device_ptr(NodeId node, void* ptr, size_t bytes) {
  InputSlot& s = slot(node);
  const CUdeviceptr p = reinterpret_cast<CUdeviceptr>(ptr);
  // Re-registration (checked when first set): nothing changes, and nothing is formatted, so a
  // per-call set_device_ptr costs no allocation.
  if (p != 0 && s.has_data && s.external == p && s.bytes == bytes) return;
  const std::string label = node_label(node);
  if (ptr == nullptr)
    throw std::invalid_argument(fmt::format("[set_device_ptr] input {}: null pointer", label));
  check_input_bytes(graph, node, bytes, "set_device_ptr");
  check_device_memory(p, bytes, "set_device_ptr", "input " + label);
  s.external = p;
  s.staged = false;
  s.bytes = bytes;
  s.has_data = true;
  s.persist = true;  // external memory is never consumed
  dirty = true;
}

void CudaRuntime::Impl::check_error_flag() {
  int flag = 0;
  std::memcpy(&flag, flag_host.data(), sizeof(int));
  if (flag == 0) return;
  CHECK_CUDA(drv().cuMemsetD8Async(error_flag->ptr, 0, sizeof(int), stream));
  sync_stream();
  for (OutputSlot& o : outputs) o.valid = false;  // their contents are not trustworthy
  // Bits of generated kernels (kernel_plan.h, KernelArg::ErrorFlag) and of dlrm_sparse and
  // dlrm_mega and embedding_bag (4); other custom kernels may set any.
  std::string what;
  if (flag & 1) what += "an out-of-range gather index";
  if (flag & 2) what += std::string(what.empty() ? "" : " and ") + "an out-of-range scatter index";
  if (flag & 4)  // dlrm_sparse, dlrm_mega, embedding_bag: offsets negative, decreasing or past nnz
    what += std::string(what.empty() ? "" : " and ") + "bad embedding-bag offsets";
  if (flag & ~7)
    what += fmt::format("{}error bits {:#x}", what.empty() ? "" : " and ", unsigned(flag & ~7));
  throw std::runtime_error(
      fmt::format("[cuda] a kernel reported bad input: {} (indices were clamped; the results of "
                  "that execute are invalid)",
                  what));
}

std::vector<std::byte> CudaRuntime::Impl::get_bytes(NodeId node) {
  CUdeviceptr src = 0;
  size_t n = 0;
  if (graph.node(node).kind == OpKind::Input) {
    const InputSlot& s = slot(node);
    if (!s.has_data)
      throw std::runtime_error(fmt::format("[get] input '{}' has no data", graph.node(node).name));
    if (s.staged) {  // not uploaded yet: the pinned region holds the data
      const std::byte* p = staged_host.data() + staged_layout.offset(size_t(staged_key[node]));
      return std::vector<std::byte>(p, p + s.bytes);
    }
    src = s.ptr();
    n = s.bytes;
  } else {
    const int b = node < plan.buffer_of_node.size() ? plan.buffer_of_node[node] : -1;
    if (b < 0 || !outputs[size_t(b)].valid)
      throw std::runtime_error(
          fmt::format("[get] output (node {}) has not been computed; call execute() first", node));
    src = outputs[size_t(b)].ptr();
    n = outputs[size_t(b)].bytes;
  }
  std::vector<std::byte> out(n);
  const bool pinned = n <= kPinnedReadMax;
  if (pinned && readback.size() < n) readback = PinnedBuffer(std::max(n, size_t{1} << 16));
  CHECK_CUDA(drv().cuMemcpyDtoHAsync_v2(flag_host.data(), error_flag->ptr, sizeof(int), stream));
  if (n > 0)
    CHECK_CUDA(drv().cuMemcpyDtoHAsync_v2(pinned ? readback.data() : out.data(), src, n, stream));
  sync_stream();
  check_error_flag();
  if (pinned && n > 0) std::memcpy(out.data(), readback.data(), n);
  return out;
}

Buffer CudaRuntime::Impl::remove_buffer(NodeId node) {
  const Node& nd = graph.node(node);
  // The buffer may go to another runtime (another stream): let every queued write finish first.
  CHECK_CUDA(drv().cuMemcpyDtoHAsync_v2(flag_host.data(), error_flag->ptr, sizeof(int), stream));
  sync_stream();
  check_error_flag();
  if (nd.kind == OpKind::Input) {
    InputSlot& s = slot(node);
    if (!s.has_data)
      throw std::runtime_error(
          fmt::format("[remove_buffer] input {} has no buffer", node_label(node)));
    if (s.external != 0)
      throw std::runtime_error(
          fmt::format("[remove_buffer] input {} is an external device pointer (set_device_ptr); it "
                      "has no buffer to move",
                      node_label(node)));
    if (s.staged) {  // the data is in the pinned region: give it a block of its own
      std::shared_ptr<DeviceAllocation> a = device_alloc(dev, s.bytes, "input " + node_label(node));
      const std::byte* p = staged_host.data() + staged_layout.offset(size_t(staged_key[node]));
      if (s.bytes > 0) CHECK_CUDA(drv().cuMemcpyHtoDAsync_v2(a->ptr, p, s.bytes, stream));
      sync_stream();
      s.owned = std::move(a);
    }
    Buffer b = make_buffer(std::move(s.owned), s.bytes, nd.dtype);
    const CUdeviceptr staged_ptr = s.staged_ptr;
    s = InputSlot{};
    s.staged_ptr = staged_ptr;
    dirty = true;
    return b;
  }
  const int idx = node < plan.buffer_of_node.size() ? plan.buffer_of_node[node] : -1;
  if (idx < 0 || !outputs[size_t(idx)].valid)
    throw std::runtime_error(
        fmt::format("[remove_buffer] output (node {}) has no buffer; call execute() first", node));
  OutputSlot& o = outputs[size_t(idx)];
  if (o.external != 0)
    throw std::runtime_error(fmt::format(
        "[remove_buffer] output (node {}) is written to external memory (set_output_device_ptr); "
        "it has no buffer to move",
        node));
  Buffer b = make_buffer(std::move(o.alloc), o.bytes, nd.dtype);
  o = OutputSlot{};
  dirty = true;  // the next execute allocates a new output buffer
  return b;
}

void CudaRuntime::Impl::set_buffer(NodeId node, Buffer b) {
  const Node& nd = graph.node(node);
  if (!b)
    throw std::invalid_argument(
        fmt::format("[set_buffer] empty buffer for input {}", node_label(node)));
  if (b.dtype != nd.dtype)
    throw std::invalid_argument(fmt::format("[set_buffer] tensor {} is {}, buffer is {}",
                                            node_label(node), dtype_name(nd.dtype),
                                            dtype_name(b.dtype)));
  std::shared_ptr<DeviceAllocation> a = as_device_allocation(b);
  if (!a)
    throw std::invalid_argument(
        fmt::format("[set_buffer] input {}: not a CUDA runtime buffer", node_label(node)));
  if (a->ctx != dev.ctx)
    throw std::invalid_argument(
        fmt::format("[set_buffer] input {}: the buffer lives on another device", node_label(node)));
  if (b.bytes > a->capacity)
    throw std::invalid_argument(
        fmt::format("[set_buffer] input {}: buffer claims {} bytes of a {}-byte block",
                    node_label(node), b.bytes, a->capacity));
  check_input_bytes(graph, node, b.bytes, "set_buffer");
  InputSlot& s = slot(node);
  if (s.owned != a || s.bytes != b.bytes || s.external != 0 || s.staged) dirty = true;
  if (s.owned && s.owned != a) sync_stream();  // queued work may still read the old block
  s.owned = std::move(a);
  s.external = 0;
  s.staged = false;
  s.bytes = b.bytes;
  s.has_data = true;
  s.persist = nd.persist;
}

}  // namespace luminal::cuda
