// Custom ops: a primitive with a reference decomposition (the semantics) plus backend kernels.
#pragma once

#include <array>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "luminal/device.h"
#include "luminal/tensor.h"

namespace luminal {

/// A generated CUDA kernel for a custom op. Kernel parameters are, in order: one `const void*` per
/// op input (contiguous, row-major, in the input's dtype), then the `void*` output, then an
/// `int* error` word the kernel sets nonzero on bad input (e.g. an out-of-range index, which it
/// clamps; the runtime raises it as an exception at the next read of a result), then one
/// `long long` per op input: its element count at this execute. The counts let one kernel serve
/// every value of a dynamic dim (e.g. a jagged nnz): the runtime re-resolves the step when a dim
/// changes and reuses the compiled kernel when the source is the same. A kernel may declare fewer
/// parameters than this list (trailing ones are then ignored), as DlrmMega's does. Last comes a
/// `void* workspace`: `workspace_bytes` of device scratch private to the step (null when 0),
/// zeroed when allocated and kept across launches, so a kernel that counts in it (e.g. blocks
/// finishing) must leave it zeroed.
struct CustomKernel {
  std::string source;  // a complete NVRTC translation unit
  std::string entry;   // extern "C" __global__ function name
  std::array<unsigned, 3> grid{1, 1, 1};
  std::array<unsigned, 3> block{1, 1, 1};
  unsigned shared_bytes = 0;
  size_t workspace_bytes = 0;
};

/// What a backend asks a custom op for a kernel with: the inputs' concrete dims and dtypes at this
/// execute, and the device (launches are sized by its SM count and shared memory).
struct KernelRequest {
  const std::vector<std::vector<int64_t>>& dims;
  const std::vector<DType>& dtypes;
  const DeviceCaps& device;
};

/// What a host (CPU) kernel of a custom op gets at each execute: the inputs (contiguous, row-major,
/// in their dtypes) with their element counts, the output, and the error word (bits as the CUDA
/// kernels set them: 1 an index out of range, which the kernel clamps; 4 bad embedding-bag offsets).
struct HostKernelArgs {
  const std::vector<const void*>& inputs;
  const std::vector<int64_t>& counts;
  void* output;
  int* error;
};

/// A host kernel; it may use OpenMP's thread pool (the CPU backend's).
using HostKernel = std::function<void(const HostKernelArgs&)>;

/// Base of every custom op. How to add one: a folder src/custom/<op>/ with op.h (the subclass and
/// its own shape struct), reference.cpp (decompose), emit.cpp (cuda_kernel), optionally host.cpp
/// (host_kernel) and test.cpp.
class CustomOp {
 public:
  virtual ~CustomOp() = default;
  /// Name used in errors, stats and generated kernel names.
  virtual std::string name() const = 0;
  /// The reference decomposition: builds the op's result from ordinary ops on `inputs`.
  /// It defines the semantics (output shape and dtype included) and is what the CPU runtime runs.
  virtual GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& inputs) const = 0;
  /// A CUDA kernel for these concrete inputs on this device, or nullopt (the backend then runs
  /// the decomposition).
  virtual std::optional<CustomKernel> cuda_kernel(const KernelRequest& request) const {
    (void)request;
    return std::nullopt;
  }
  /// A host kernel for these concrete inputs, or nullopt (the CPU backend then runs the
  /// decomposition).
  virtual std::optional<HostKernel> host_kernel(const KernelRequest& request) const {
    (void)request;
    return std::nullopt;
  }
};

}  // namespace luminal
