// Device discovery, primary contexts and the public availability queries.
#include "cuda/runtime/device.h"

#include <fmt/format.h>

#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>

#include "cuda/runtime/nvrtc.h"
#include "luminal/cuda.h"

namespace luminal::cuda {
namespace {

std::unique_ptr<DeviceInfo> open_device(int ordinal) {
  const Driver& d = drv();
  auto info = std::make_unique<DeviceInfo>();
  info->ordinal = ordinal;
  CHECK_CUDA(d.cuDeviceGet(&info->dev, ordinal));
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    CHECK_CUDA(d.cuDeviceGetAttribute(&v, a, info->dev));
    return v;
  };
  info->cc_major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  info->cc_minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  info->sm_count = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  info->shared_per_block = size_t(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN));
  info->shared_per_sm = size_t(attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR));
  info->l2_bytes = size_t(attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE));
  CHECK_CUDA(d.cuDeviceTotalMem_v2(&info->total_mem, info->dev));
  char name[256] = {};
  CHECK_CUDA(d.cuDeviceGetName(name, sizeof(name) - 1, info->dev));
  info->name = name;
  // Retained and never released: device buffers handed out by remove_buffer may outlive runtimes.
  CHECK_CUDA(d.cuDevicePrimaryCtxRetain(&info->ctx, info->dev));
  return info;
}

}  // namespace

std::string DeviceInfo::arch() const { return fmt::format("sm_{}{}", cc_major, cc_minor); }

int device_count() noexcept {
  if (!driver_problem().empty()) return 0;
  int n = 0;
  if (drv().cuDeviceGetCount(&n) != CUDA_SUCCESS) return 0;
  return n;
}

const DeviceInfo& device_info(int ordinal) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<DeviceInfo>> devices;
  std::lock_guard<std::mutex> lock(mu);
  auto it = devices.find(ordinal);
  if (it != devices.end()) return *it->second;
  drv();  // throws with the driver problem, if any
  int n = device_count();
  if (ordinal < 0 || ordinal >= n)
    throw std::runtime_error(fmt::format("[cuda] no CUDA device {} ({} present)", ordinal, n));
  auto [pos, inserted] = devices.emplace(ordinal, open_device(ordinal));
  return *pos->second;
}

std::string nvrtc_target_of_device(int ordinal) {
  const DeviceInfo& d = device_info(ordinal);
  return nvrtc_target(d.cc_major, d.cc_minor);
}

bool available() {
  try {
    return device_count() > 0;
  } catch (...) {
    return false;
  }
}

std::string device_description() {
  if (!driver_problem().empty()) return driver_problem();
  if (device_count() == 0) return "no CUDA device";
  try {
    const DeviceInfo& d = device_info(0);
    return fmt::format("{} ({})", d.name, d.arch());
  } catch (const std::exception& e) {
    return e.what();
  }
}

}  // namespace luminal::cuda
