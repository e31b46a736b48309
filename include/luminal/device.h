// What a backend tells the compiler and the kernels about the device it runs on: custom ops size
// their launches by it (blocks per SM, shared memory) instead of assuming one GPU.
#pragma once

#include <cstddef>
#include <string>

namespace luminal {

/// A device's capabilities, as its backend reports them (zeros where a field does not apply).
struct DeviceCaps {
  std::string name;          // "NVIDIA H200", "host (16 threads)"
  std::string arch;          // "sm_90" (the NVRTC target), "x86_64"
  int cc_major = 0, cc_minor = 0;  // CUDA compute capability
  int sm_count = 0;          // CUDA: multiprocessors; a host: hardware threads
  size_t shared_per_block = 0;  // CUDA: dynamic shared memory a block may opt in to, in bytes
  size_t shared_per_sm = 0;     // CUDA: shared memory per multiprocessor, in bytes
  size_t l2_bytes = 0;          // last-level cache
  size_t memory_bytes = 0;      // device memory (a host: 0)
};

}  // namespace luminal
