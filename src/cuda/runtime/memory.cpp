// Device allocations and pinned staging.
#include "cuda/runtime/memory.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <utility>

namespace luminal::cuda {
namespace {

constexpr size_t kAlign = 256;
constexpr size_t kStagingMin = size_t{1} << 20;     // first pinned staging buffer
constexpr size_t kStagingChunk = size_t{64} << 20;  // larger uploads go through in chunks

size_t round_up(size_t v, size_t a) { return (v + a - 1) / a * a; }

}  // namespace

void DeviceAllocationDeleter::operator()(DeviceAllocation* a) const noexcept {
  if (a == nullptr) return;
  if (a->ptr != 0 && driver_problem().empty()) {
    const Driver& d = drv();
    CUresult r = d.cuCtxSetCurrent(a->ctx);
    if (r == CUDA_SUCCESS) r = d.cuMemFree_v2(a->ptr);
    // At process exit the driver may already be torn down; there is nothing left to free then.
    if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED)
      std::fprintf(stderr, "[cuda] cuMemFree failed: %s\n", cuda_error_text(r).c_str());
  }
  delete a;
}

std::shared_ptr<DeviceAllocation> device_alloc(const DeviceInfo& dev, size_t bytes,
                                               std::string_view what) {
  size_t cap = round_up(std::max<size_t>(bytes, 1), kAlign);
  CUdeviceptr p = 0;
  CUresult r = drv().cuMemAlloc_v2(&p, cap);
  if (r != CUDA_SUCCESS)
    throw_cuda_error(r, "cuMemAlloc_v2", fmt::format("{} bytes for {}", cap, what));
  return std::shared_ptr<DeviceAllocation>(new DeviceAllocation{p, cap, dev.ctx},
                                           DeviceAllocationDeleter{});
}

std::shared_ptr<DeviceAllocation> as_device_allocation(const Buffer& b) {
  if (!b.impl || std::get_deleter<DeviceAllocationDeleter>(b.impl) == nullptr) return nullptr;
  return std::static_pointer_cast<DeviceAllocation>(b.impl);
}

Buffer make_buffer(std::shared_ptr<DeviceAllocation> a, size_t bytes, DType dt) {
  Buffer b;
  b.impl = std::move(a);
  b.bytes = bytes;
  b.dtype = dt;
  return b;
}

PinnedBuffer::PinnedBuffer(size_t bytes) : size_(bytes) {
  void* p = nullptr;
  // Portable: page-locked for every context, whichever device is current when it is used or freed.
  CUresult r = drv().cuMemHostAlloc(&p, bytes, CU_MEMHOSTALLOC_PORTABLE);
  if (r != CUDA_SUCCESS)
    throw_cuda_error(r, "cuMemHostAlloc", fmt::format("{} bytes of pinned staging memory", bytes));
  data_ = static_cast<std::byte*>(p);
}

PinnedBuffer::~PinnedBuffer() {
  if (data_ == nullptr || !driver_problem().empty()) return;
  CUresult r = drv().cuMemFreeHost(data_);
  if (r != CUDA_SUCCESS && r != CUDA_ERROR_DEINITIALIZED)
    std::fprintf(stderr, "[cuda] cuMemFreeHost failed: %s\n", cuda_error_text(r).c_str());
}

PinnedBuffer::PinnedBuffer(PinnedBuffer&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}

PinnedBuffer& PinnedBuffer::operator=(PinnedBuffer&& o) noexcept {
  if (this != &o) {
    PinnedBuffer old(std::move(*this));  // frees the current memory on scope exit
    data_ = std::exchange(o.data_, nullptr);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

std::byte* Staging::reserve(size_t bytes, CUstream stream) {
  if (used_ + bytes > buf_.size()) {
    // Every region handed out may still be the source of a copy in flight: wait for them.
    CHECK_CUDA(drv().cuStreamSynchronize(stream));
    used_ = 0;
    if (bytes > buf_.size())
      buf_ = PinnedBuffer(std::max({bytes, kStagingMin, std::min(2 * buf_.size(), kStagingChunk)}));
  }
  std::byte* p = buf_.data() + used_;
  used_ = round_up(used_ + bytes, kAlign);
  return p;
}

void Staging::upload(CUdeviceptr dst, const std::byte* src, size_t bytes, CUstream stream) {
  size_t done = 0;
  while (done < bytes) {
    size_t n = std::min(bytes - done, kStagingChunk);
    std::byte* p = reserve(n, stream);
    std::memcpy(p, src + done, n);
    CHECK_CUDA(drv().cuMemcpyHtoDAsync_v2(dst + done, p, n, stream));
    done += n;
  }
}

}  // namespace luminal::cuda
