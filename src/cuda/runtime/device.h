// One CUDA device and its primary context, shared by every runtime on it.
#pragma once

#include <cstddef>
#include <string>

#include "cuda/runtime/driver.h"

namespace luminal::cuda {

/// A device with its retained primary context and the properties the runtime needs.
struct DeviceInfo {
  int ordinal = 0;
  CUdevice dev = 0;
  CUcontext ctx = nullptr;
  int cc_major = 0, cc_minor = 0;
  int sm_count = 0;
  size_t shared_per_block = 0;  // dynamic shared memory a block may opt in to
  size_t shared_per_sm = 0;
  size_t l2_bytes = 0;
  size_t total_mem = 0;
  std::string name;
  /// "sm_90": the NVRTC target of this device.
  std::string arch() const;
  /// Makes this device's context current on the calling thread (cheap; a thread-local write).
  void make_current() const { CHECK_CUDA(drv().cuCtxSetCurrent(ctx)); }
};

/// Number of devices, 0 when there is no usable driver (never throws).
int device_count() noexcept;
/// The device `ordinal`; its primary context is retained once for the life of the process, so
/// buffers that outlive their runtime can still be freed. Throws "[cuda] ..." when absent.
const DeviceInfo& device_info(int ordinal);

}  // namespace luminal::cuda
