// Device allocations (shared, typed for Buffer round trips) and pinned staging for uploads.
#pragma once

#include <cstddef>
#include <memory>

#include "cuda/runtime/device.h"
#include "luminal/runtime.h"

namespace luminal::cuda {

/// One cuMemAlloc'd block; freed by DeviceAllocationDeleter when the last owner lets go.
struct DeviceAllocation {
  CUdeviceptr ptr = 0;  // 0 for an empty allocation
  size_t capacity = 0;
  CUcontext ctx = nullptr;
};

/// Frees a DeviceAllocation (errors are printed, never thrown). Its type also marks Buffers the
/// CUDA runtime made, so set_buffer can refuse foreign ones (std::get_deleter).
struct DeviceAllocationDeleter {
  void operator()(DeviceAllocation* a) const noexcept;
};

/// Allocates `bytes` (at least 1) of device memory on dev; throws "[cuda] cuMemAlloc ..." naming
/// `what`.
std::shared_ptr<DeviceAllocation> device_alloc(const DeviceInfo& dev, size_t bytes,
                                               std::string_view what);
/// The DeviceAllocation a Buffer holds, or nullptr when the Buffer was not made by the CUDA
/// runtime.
std::shared_ptr<DeviceAllocation> as_device_allocation(const Buffer& b);
/// Wraps an allocation holding `bytes` bytes of `dt` as a Buffer.
Buffer make_buffer(std::shared_ptr<DeviceAllocation> a, size_t bytes, DType dt);

/// Page-locked host memory (cuMemHostAlloc) of a fixed size.
class PinnedBuffer {
 public:
  PinnedBuffer() = default;
  /// Allocates `bytes` of pinned memory (context must be current).
  explicit PinnedBuffer(size_t bytes);
  ~PinnedBuffer();
  PinnedBuffer(const PinnedBuffer&) = delete;
  PinnedBuffer& operator=(const PinnedBuffer&) = delete;
  PinnedBuffer(PinnedBuffer&& o) noexcept;
  PinnedBuffer& operator=(PinnedBuffer&& o) noexcept;
  /// Start of the memory.
  std::byte* data() const { return data_; }
  /// Size in bytes.
  size_t size() const { return size_; }

 private:
  std::byte* data_ = nullptr;
  size_t size_ = 0;
};

/// Host-to-device uploads through a pinned bump buffer. Regions handed out stay untouched until
/// the stream is synchronized (by the caller, or here when the buffer is full), so no copy in
/// flight ever has its source overwritten.
class Staging {
 public:
  /// Copies `bytes` host bytes to dst asynchronously on stream (may synchronize the stream).
  void upload(CUdeviceptr dst, const std::byte* src, size_t bytes, CUstream stream);
  /// Tells the staging buffer that the stream was synchronized: every region is free again.
  void stream_synchronized() { used_ = 0; }

 private:
  std::byte* reserve(size_t bytes, CUstream stream);
  PinnedBuffer buf_;
  size_t used_ = 0;
};

}  // namespace luminal::cuda
