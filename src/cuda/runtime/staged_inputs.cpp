// Staged host inputs: every owned, non-persisted input the plan reads has a slot in one pinned
// region laid out at plan time, mirrored by one device block. set_data / host_input write the
// slot on the host; execute() uploads the whole region with ONE copy right before the plan runs.
//
// Where the copy goes: by default right before cuGraphLaunch (one extra driver call; the host may
// rewrite the region as soon as the copy is done, before the kernels finish). With
// LUMINAL_STAGED_IN_GRAPH=1 the copy is the captured graph's first node instead (no extra call;
// the host waits for the whole graph before rewriting). Measure both with
// `dlrm run ... --bench --input-mode host`; the default stays until a measurement says otherwise.
#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "cuda/runtime/cuda_plan.h"

namespace luminal::cuda {
namespace {

// Bytes of an input at the dims we know before the first execute (static shape, or dim_hints);
// 0 when unknown (the slot then grows on first use).
size_t initial_bytes(const Node& n, const DynMap& hints) {
  try {
    int64_t numel = 1;
    for (const Expr& d : n.shape) numel *= d.eval(hints);
    return numel > 0 ? size_t(numel) * dtype_size(n.dtype) : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

}  // namespace

void CudaPlan::init_staged() {
  staged_key.assign(graph_.size(), -1);
  std::vector<size_t> caps;
  for (NodeId id : plan_inputs) {
    const Node& n = graph_.node(id);
    if (n.persist) continue;  // weights: uploaded once into their own blocks
    staged_key[id] = int(staged_nodes.size());
    staged_nodes.push_back(id);
    caps.push_back(initial_bytes(n, dim_hints));
  }
  staged_layout = StagingLayout(std::move(caps));
  CUevent e = nullptr;
  CHECK_CUDA(drv().cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
  staged_done.reset(e);
  relayout_staged(StagingLayout{});
}

void CudaPlan::relayout_staged(const StagingLayout& old) {
  sync_stream();  // the old region may feed a queued copy, the old block queued kernels
  const size_t total = staged_layout.total();
  PinnedBuffer host;
  std::shared_ptr<DeviceAllocation> block;
  if (total > 0) {
    host = PinnedBuffer(total);
    block = device_alloc(dev, total, "staged host inputs");
  }
  for (size_t k = 0; k < staged_nodes.size(); ++k) {
    InputSlot& s = slot(staged_nodes[k]);
    // Bound data moves to the new region (an input set before another one grew its slot).
    if (s.staged && s.has_data && s.bytes > 0)
      std::memcpy(host.data() + staged_layout.offset(k), staged_host.data() + old.offset(k),
                  s.bytes);
    s.staged_ptr = block ? block->ptr + staged_layout.offset(k) : 0;
  }
  staged_host = std::move(host);
  staged_dev = std::move(block);
  dirty = true;  // device pointers changed
}

bool CudaPlan::is_staged(NodeId node) const {
  return node < staged_key.size() && staged_key[node] >= 0;
}

std::byte* CudaPlan::stage(NodeId node, size_t bytes) {
  const size_t k = size_t(staged_key[node]);
  if (bytes > staged_layout.capacity(k)) {
    const StagingLayout old = staged_layout;
    staged_layout.reserve(k, bytes);
    relayout_staged(old);
  } else {
    wait_staged();
  }
  InputSlot& s = slot(node);
  if (!s.staged || s.external != 0 || s.bytes != bytes) dirty = true;
  if (s.owned) {
    sync_stream();  // queued work may still read the block this input used before
    s.owned.reset();
  }
  s.external = 0;
  s.staged = true;
  s.bytes = bytes;
  s.has_data = true;
  s.persist = false;
  s.version = 0;
  return staged_host.data() + staged_layout.offset(k);
}

void CudaPlan::wait_staged() {
  if (!staged_pending) return;
  CHECK_CUDA(drv().cuEventSynchronize(staged_done.get()));
  staged_pending = false;
}

void CudaPlan::upload_staged() {
  if (staged_layout.total() == 0) return;
  bool any = false;
  for (NodeId id : staged_nodes) any = any || (inputs[id].staged && inputs[id].has_data);
  if (!any) return;  // every staged input is bound to external memory this time
  const Driver& d = drv();
  CHECK_CUDA(
      d.cuMemcpyHtoDAsync_v2(staged_dev->ptr, staged_host.data(), staged_layout.total(), stream));
  CHECK_CUDA(d.cuEventRecord(staged_done.get(), stream));
  staged_pending = true;
}

std::span<std::byte> CudaPlan::host_input(NodeId node, size_t bytes) {
  dev.make_current();
  const Node& n = graph_.node(node);
  if (!is_staged(node))
    throw std::invalid_argument(fmt::format(
        "[host_input] input {} is {}; host_input serves non-persisted inputs the plan reads (use "
        "set_data)",
        node_label(node), n.persist ? "persisted" : "not read by the plan"));
  if (bytes == SIZE_MAX) {
    int64_t numel = 1;
    for (const Expr& d : n.shape) {
      if (!d.as_const())
        throw std::invalid_argument(
            fmt::format("[host_input] input {} has the symbolic shape {}; pass its byte count",
                        node_label(node), shape_string(n.shape)));
      numel *= *d.as_const();
    }
    bytes = size_t(numel) * dtype_size(n.dtype);
  }
  check_input_bytes(graph_, node, bytes, "host_input");
  return {stage(node, bytes), bytes};
}

}  // namespace luminal::cuda
