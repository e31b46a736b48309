// The caller's memory and streams: external outputs (set_output_ptr), the stream work runs
// on (set_stream), kernel-reported errors for zero-copy callers (check_errors), and the
// device-memory check shared with set_device_ptr. What the Python package
// binds zero-copy to torch tensors and PyTorch's current stream.
#include <fmt/format.h>

#include <stdexcept>

#include "cuda/runtime/nvrtc.h"
#include "cuda/runtime/cuda_plan.h"

namespace luminal::cuda {
namespace {

// The element count of a shape without symbols.
std::optional<int64_t> static_numel(const std::vector<Expr>& shape) {
  int64_t n = 1;
  for (const Expr& d : shape) {
    std::optional<int64_t> c = d.as_const();
    if (!c) return std::nullopt;
    n *= *c;
  }
  return n;
}

}  // namespace

void CudaPlan::check_device_memory(CUdeviceptr p, size_t bytes, const char* op,
                                            const std::string& what) const {
  // The pointer must be memory of this runtime's device covering [p, p + bytes): a stray pointer
  // would only fail later as an illegal address that kills the context.
  const void* ptr = reinterpret_cast<const void*>(p);
  CUdeviceptr base = 0;
  size_t size = 0;
  CUresult r = drv().cuMemGetAddressRange_v2(&base, &size, p);
  if (r == CUDA_SUCCESS) {
    if (p + bytes > base + size)
      throw std::invalid_argument(
          fmt::format("[{}] {}: {} bytes at {} overrun its allocation ({} bytes left)", op, what,
                      bytes, ptr, base + size - p));
  } else {
    // Not a cuMemAlloc block (virtual-memory mappings, e.g. PyTorch's expandable segments):
    // accept device or managed memory without a range check, refuse anything else.
    unsigned int type = 0;
    CUresult t = drv().cuPointerGetAttribute(&type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, p);
    if (t != CUDA_SUCCESS || (type != CU_MEMORYTYPE_DEVICE && type != CU_MEMORYTYPE_UNIFIED))
      throw std::invalid_argument(fmt::format("[{}] {}: {} is not CUDA device memory ({})", op,
                                              what, ptr, cuda_error_text(r)));
  }
  int ordinal = -1;
  r = drv().cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p);
  if (r == CUDA_SUCCESS && ordinal != dev.ordinal)
    throw std::invalid_argument(
        fmt::format("[{}] {}: {} is memory of device {}, this runtime runs on {}", op, what, ptr,
                    ordinal, dev.ordinal));
}

void CudaPlan::set_output_ptr(NodeId node, void* ptr, size_t bytes) {
  dev.make_current();
  const int b = node < plan.buffer_of_node.size() ? plan.buffer_of_node[node] : -1;
  if (b < 0 || plan.buffers[size_t(b)].kind != compiler::PlanBuffer::Kind::Output)
    throw std::invalid_argument(fmt::format(
        "[set_output_ptr] {} is not an output of the loaded plan", node_label(node)));
  OutputSlot& o = outputs[size_t(b)];
  const CUdeviceptr p = reinterpret_cast<CUdeviceptr>(ptr);
  // The per-call case: the same memory again changes nothing and formats nothing.
  if (o.external == p && o.external_bytes == (p != 0 ? bytes : 0)) return;
  if (p == 0) {  // back to an owned buffer, placed at the next execute
    o.external = 0;
    o.external_bytes = 0;
    o.valid = false;
    dirty = true;
    return;
  }
  const std::string what = "output " + node_label(node);
  const Node& n = graph_.node(node);
  if (std::optional<int64_t> numel = static_numel(n.shape);
      numel && bytes != size_t(*numel) * dtype_size(n.dtype))
    throw std::invalid_argument(fmt::format(
        "[set_output_ptr] {} is {} {} ({} bytes), got {} bytes", what, dtype_name(n.dtype),
        shape_string(n.shape), size_t(*numel) * dtype_size(n.dtype), bytes));
  check_device_memory(p, bytes, "set_output_ptr", what);
  // The owned buffer is kept: queued work may still write it, and nullptr brings it back.
  o.external = p;
  o.external_bytes = bytes;
  o.valid = false;  // the new memory holds no result yet
  dirty = true;
}

void CudaPlan::switch_stream(CUstream s) {
  if (s == stream) return;
  // Work queued on the old stream must finish before the new one reuses buffers and the staged
  // region; switching is rare (a new torch stream), so one sync is cheaper than events per call.
  sync_stream();
  stream = s;
}

void CudaPlan::set_stream(void* stream) {
  CUstream s = static_cast<CUstream>(stream);
  if (s == this->stream) return;  // the per-call case: not even the context is touched
  dev.make_current();
  switch_stream(s);
}

void CudaPlan::use_own_stream() {
  dev.make_current();
  switch_stream(own_stream);
}

void CudaPlan::check_errors() {
  dev.make_current();
  CHECK_CUDA(drv().cuMemcpyDtoHAsync_v2(flag_host.data(), error_flag->ptr, sizeof(int), stream));
  sync_stream();
  check_error_flag();
}

}  // namespace luminal::cuda
