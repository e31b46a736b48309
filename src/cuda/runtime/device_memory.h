// Raw device memory for tests and benchmarks that must not include CUDA headers.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace luminal::cuda {

/// A block of device memory on one device, with synchronous copies (for tests and benchmarks;
/// the runtime itself uses DeviceAllocation). Throws "[cuda] ..." on any failure.
class DeviceMemory {
 public:
  /// Allocates `bytes` on device `device`.
  explicit DeviceMemory(size_t bytes, int device = 0);
  ~DeviceMemory();
  DeviceMemory(const DeviceMemory&) = delete;
  DeviceMemory& operator=(const DeviceMemory&) = delete;
  /// The device address.
  void* get() const { return ptr_; }
  /// Size in bytes.
  size_t size() const { return bytes_; }
  /// Copies n host bytes to offset 0 and waits.
  void upload(const void* src, size_t n);
  /// Copies n bytes from offset 0 to the host and waits.
  void download(void* dst, size_t n) const;
  /// Sets every byte to `value` and waits.
  void fill(uint8_t value);

 private:
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
  int device_ = 0;
};

}  // namespace luminal::cuda
