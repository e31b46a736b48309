// CudaPlan: the data-binding half (upload, device pointers, reads, buffer and input moves), timing,
// and the CUDA backend itself. Running the plan lives in plan_exec.cpp, setting it up in
// plan_setup.cpp.
#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include "cuda/runtime/nvrtc.h"
#include "cuda/runtime/cuda_plan.h"

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

// ---- CudaPlan: what the compiler calls besides binding ----

namespace {

// What take_input moves: the slot (device memory or an external pointer), or the bytes of a staged
// input (they live in the plan's own pinned region, so they travel as a copy).
struct MovedInput {
  InputSlot slot;
  std::vector<std::byte> staged_bytes;
  bool staged = false;
};

}  // namespace

BoundInput CudaPlan::take_input(NodeId node) {
  dev.make_current();
  InputSlot& s = slot(node);
  if (!s.has_data) return {};
  auto moved = std::make_shared<MovedInput>();
  if (s.staged) {
    moved->staged = true;
    moved->staged_bytes = get_bytes(node);
  } else {
    sync_stream();  // queued work of this plan may still read the block
    moved->slot = s;
    moved->slot.staged_ptr = 0;
  }
  const CUdeviceptr staged_ptr = s.staged_ptr;
  s = InputSlot{};
  s.staged_ptr = staged_ptr;
  dirty = true;
  return BoundInput{std::move(moved)};
}

void CudaPlan::give_input(NodeId node, BoundInput b) {
  dev.make_current();
  if (!b) return;
  const auto moved = std::static_pointer_cast<MovedInput>(b.data);  // from a CudaPlan's take_input
  if (moved->staged) {
    upload(node, moved->staged_bytes, /*persist=*/false);
    return;
  }
  InputSlot& d = slot(node);
  const CUdeviceptr staged_ptr = d.staged_ptr;
  d = moved->slot;
  d.staged_ptr = staged_ptr;
  dirty = true;
}

double CudaPlan::time_us(const DynMap& dyn, int warmup, int trials) {
  dev.make_current();
  for (int i = 0; i < warmup; ++i) execute(dyn, false);
  const Driver& d = drv();
  std::vector<double> us;
  EventHandle start, stop;
  CUevent e0 = nullptr, e1 = nullptr;
  CHECK_CUDA(d.cuEventCreate(&e0, CU_EVENT_DEFAULT));
  start.reset(e0);
  CHECK_CUDA(d.cuEventCreate(&e1, CU_EVENT_DEFAULT));
  stop.reset(e1);
  for (int i = 0; i < std::max(trials, 1); ++i) {
    CHECK_CUDA(d.cuEventRecord(e0, stream));
    execute(dyn, false);
    CHECK_CUDA(d.cuEventRecord(e1, stream));
    CHECK_CUDA(d.cuEventSynchronize(e1));
    float ms = 0;
    CHECK_CUDA(d.cuEventElapsedTime_v2(&ms, e0, e1));
    us.push_back(ms * 1e3);
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

std::vector<double> CudaPlan::execute_timed(const DynMap& dyn, int iterations) {
  dev.make_current();
  const Driver& d = drv();
  std::vector<CUevent> events(2 * static_cast<size_t>(std::max(iterations, 0)), nullptr);
  std::vector<double> us(events.size() / 2);
  auto destroy = [&] {
    for (CUevent e : events)
      if (e) d.cuEventDestroy_v2(e);
  };
  try {
    for (CUevent& e : events) CHECK_CUDA(d.cuEventCreate(&e, CU_EVENT_DEFAULT));
    for (size_t i = 0; i < us.size(); ++i) {
      CHECK_CUDA(d.cuEventRecord(events[2 * i], stream));
      execute(dyn, true);
      CHECK_CUDA(d.cuEventRecord(events[2 * i + 1], stream));
    }
    sync_stream();
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

uint64_t CudaPlan::memory_bytes() const {
  uint64_t b = arena_bytes;
  for (int o : output_buffers) b += buffer_bytes.empty() ? 0 : buffer_bytes.at(size_t(o));
  for (const std::unique_ptr<Fp8Step>& f : fp8_steps)  // fp8 weight copies and scratch
    if (f)
      for (const auto* a : {&f->w8, &f->w_scale, &f->a8, &f->a_scale})
        b += *a ? (*a)->capacity : 0;
  return b;
}

void CudaPlan::reserve_dim(const std::string& dim, int64_t max) {
  reserve_dim_name = dim;
  reserve_max = max;
}

void CudaPlan::synchronize() {
  dev.make_current();
  sync_stream();
}

PlanStats CudaPlan::stats() const {
  PlanStats s;
  s.kernels = plan.steps.size();
  s.steps = labels;
  s.counters["graph_streams"] = graph_exec ? last_capture_streams : 0;
  s.counters["graph_priorities"] = graph_exec && last_capture_prioritized ? 1 : 0;
  s.counters["gemv_launches_saved"] = gemv_launches_saved;
  if (precision == Precision::FP8) {
    int64_t fp8 = 0;
    for (const std::unique_ptr<Fp8Step>& f : fp8_steps) fp8 += f && f->active ? 1 : 0;
    s.counters["fp8_matmuls"] = fp8;
    s.counters["fp8_weight_quantizations"] = fp8_weight_quantizations;
    s.counters["fp8_declined"] = fp8_declined;  // qualified, but bf16 timed faster
  }
  return s;
}

// ---- binding data ----

InputSlot& CudaPlan::slot(NodeId node) {
  if (inputs.size() <= node) {  // the graph grew after construction
    for (NodeId id = NodeId(inputs.size()); id < graph_.size(); ++id)
      if (graph_.node(id).kind == OpKind::Input) input_nodes.push_back(id);
    inputs.resize(graph_.size());
  }
  return inputs.at(node);
}

std::string CudaPlan::node_label(NodeId node) const {
  const Node& n = graph_.node(node);
  if (!n.name.empty()) return fmt::format("'{}'", n.name);
  return fmt::format("(node {}, {})", node, op_name(n.kind));
}

void CudaPlan::sync_stream() {
  CHECK_CUDA(drv().cuStreamSynchronize(stream));
  staging.stream_synchronized();
  staged_pending = false;
}

void CudaPlan::upload(NodeId node, std::span<const std::byte> bytes, bool persist) {
  dev.make_current();
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
  s.version = persist ? next_slot_version() : 0;
}

void CudaPlan::set_device_ptr(NodeId node, void* ptr, size_t bytes) {
  dev.make_current();
  InputSlot& s = slot(node);
  const CUdeviceptr p = reinterpret_cast<CUdeviceptr>(ptr);
  // Re-registration (checked when first set): nothing changes, and nothing is formatted, so a
  // per-call set_device_ptr costs no allocation.
  if (p != 0 && s.has_data && s.external == p && s.bytes == bytes) return;
  const std::string label = node_label(node);
  if (ptr == nullptr)
    throw std::invalid_argument(fmt::format("[set_device_ptr] input {}: null pointer", label));
  check_input_bytes(graph_, node, bytes, "set_device_ptr");
  check_device_memory(p, bytes, "set_device_ptr", "input " + label);
  s.external = p;
  s.staged = false;
  s.bytes = bytes;
  s.has_data = true;
  s.persist = true;  // external memory is never consumed
  s.version = 0;     // the caller may change it at any time
  dirty = true;
}

void CudaPlan::check_error_flag() {
  int flag = 0;
  std::memcpy(&flag, flag_host.data(), sizeof(int));
  if (flag == 0) return;
  CHECK_CUDA(drv().cuMemsetD8Async(error_flag->ptr, 0, sizeof(int), stream));
  sync_stream();
  for (OutputSlot& o : outputs) o.valid = false;  // their contents are not trustworthy
  // Bits of generated kernels (kernel_plan.h, KernelArg::ErrorFlag) and of dlrm_sparse,
  // dlrm_mega, embedding_bag and bag_concat (4); other custom kernels may set any.
  throw BadInputError(
      fmt::format("[cuda] a kernel reported bad input: {} (indices were clamped; the results of "
                  "that execute are invalid)",
                  describe_error_bits(flag)));
}

std::vector<std::byte> CudaPlan::get_bytes(NodeId node) {
  dev.make_current();
  CUdeviceptr src = 0;
  size_t n = 0;
  if (graph_.node(node).kind == OpKind::Input) {
    const InputSlot& s = slot(node);
    if (!s.has_data)
      throw std::runtime_error(fmt::format("[get] input '{}' has no data", graph_.node(node).name));
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

Buffer CudaPlan::remove_buffer(NodeId node) {
  dev.make_current();
  const Node& nd = graph_.node(node);
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
        "[remove_buffer] output (node {}) is written to external memory (set_output_ptr); "
        "it has no buffer to move",
        node));
  Buffer b = make_buffer(std::move(o.alloc), o.bytes, nd.dtype);
  o = OutputSlot{};
  dirty = true;  // the next execute allocates a new output buffer
  return b;
}

void CudaPlan::set_buffer(NodeId node, Buffer b) {
  dev.make_current();
  const Node& nd = graph_.node(node);
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
  check_input_bytes(graph_, node, b.bytes, "set_buffer");
  InputSlot& s = slot(node);
  if (s.owned != a || s.bytes != b.bytes || s.external != 0 || s.staged) dirty = true;
  if (s.owned && s.owned != a) sync_stream();  // queued work may still read the old block
  s.owned = std::move(a);
  s.external = 0;
  s.staged = false;
  s.bytes = b.bytes;
  s.has_data = true;
  s.persist = nd.persist;
  s.version = nd.persist ? next_slot_version() : 0;
}

}  // namespace luminal::cuda
