// DeviceMemory: synchronous helpers on the legacy default stream.
#include "cuda/runtime/device_memory.h"

#include <stdexcept>

#include "cuda/runtime/device.h"

namespace luminal::cuda {
namespace {
// Stream 0 is the legacy default stream; synchronizing it waits for these copies.
constexpr CUstream kDefaultStream = nullptr;
}  // namespace

DeviceMemory::DeviceMemory(size_t bytes, int device) : bytes_(bytes), device_(device) {
  device_info(device).make_current();
  CUdeviceptr p = 0;
  CHECK_CUDA(drv().cuMemAlloc_v2(&p, bytes == 0 ? 1 : bytes));
  ptr_ = reinterpret_cast<void*>(p);
}

DeviceMemory::~DeviceMemory() {
  if (ptr_ == nullptr) return;
  device_info(device_).make_current();
  drv().cuMemFree_v2(reinterpret_cast<CUdeviceptr>(ptr_));
}

void DeviceMemory::upload(const void* src, size_t n) {
  if (n > bytes_) throw std::invalid_argument("[cuda] DeviceMemory::upload beyond the block");
  device_info(device_).make_current();
  CHECK_CUDA(
      drv().cuMemcpyHtoDAsync_v2(reinterpret_cast<CUdeviceptr>(ptr_), src, n, kDefaultStream));
  CHECK_CUDA(drv().cuStreamSynchronize(kDefaultStream));
}

void DeviceMemory::download(void* dst, size_t n) const {
  if (n > bytes_) throw std::invalid_argument("[cuda] DeviceMemory::download beyond the block");
  device_info(device_).make_current();
  CHECK_CUDA(
      drv().cuMemcpyDtoHAsync_v2(dst, reinterpret_cast<CUdeviceptr>(ptr_), n, kDefaultStream));
  CHECK_CUDA(drv().cuStreamSynchronize(kDefaultStream));
}

void DeviceMemory::fill(uint8_t value) {
  device_info(device_).make_current();
  CHECK_CUDA(
      drv().cuMemsetD8Async(reinterpret_cast<CUdeviceptr>(ptr_), value, bytes_, kDefaultStream));
  CHECK_CUDA(drv().cuStreamSynchronize(kDefaultStream));
}

}  // namespace luminal::cuda
