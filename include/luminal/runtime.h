// The runtime contract shared by the CPU reference runtime and the CUDA runtime.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "luminal/tensor.h"

namespace luminal {

/// A buffer moved out of a runtime by remove_buffer (backend-owned memory; opaque).
struct Buffer {
  std::shared_ptr<void> impl;
  size_t bytes = 0;
  DType dtype = DType::F32;
  /// True when the buffer holds data.
  explicit operator bool() const { return impl != nullptr; }
};

/// How load_safetensors (luminal/safetensors.h) reads a checkpoint.
struct LoadOptions {
  /// Load an F32/BF16/F16 file tensor into a float input of another float dtype, converted on the
  /// host while streaming (round to nearest even). Off: a dtype mismatch is an error.
  bool convert_floats = false;
  /// A one-line progress bar on stderr for loads over ~1 GB, and a summary line at the end (with
  /// the device memory used, on CUDA).
  bool progress = false;
  /// CUDA: refuse the load when it needs more device memory than this many bytes (0: no limit but
  /// the device's free memory, which is always checked).
  uint64_t device_memory_limit = 0;
};

/// One validated checkpoint tensor bound for an Input (the backend side of load_safetensors): its
/// file bytes in dtype `from`, to be stored as `bytes` bytes of the input's dtype `to`.
struct LoadItem {
  NodeId node = 0;
  std::span<const std::byte> data;
  DType from = DType::F32, to = DType::F32;
  uint64_t bytes = 0;
};

/// A kernel reported bad input (an out-of-range index, bad embedding-bag offsets): the results of
/// that execute are invalid. Raised at the next read or check after the execute.
class BadInputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What a kernel's error word says (1: an out-of-range gather index, 2: scatter index, 4: bad
/// embedding-bag offsets; other bits by number), for a runtime's BadInputError.
std::string describe_error_bits(int flag);

/// One runtime executes one graph. Inputs are bound by tensor; results are read by tensor.
///
/// Consumed-input semantics: after execute(), owned inputs that are neither persisted nor read
/// back through an Output are freed (set them again before the next execute); external device
/// pointers (set_device_ptr) are never freed and stay registered.
class Runtime {
 public:
  explicit Runtime(const Graph& g) : graph_(g) {}
  virtual ~Runtime() = default;
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  /// Owned input data, typed; the dtype must equal the tensor's dtype.
  void set_data(const GraphTensor& t, std::span<const float> v);
  void set_data(const GraphTensor& t, std::span<const double> v);
  void set_data(const GraphTensor& t, std::span<const f16> v);
  void set_data(const GraphTensor& t, std::span<const bf16> v);
  void set_data(const GraphTensor& t, std::span<const int32_t> v);
  void set_data(const GraphTensor& t, std::span<const int64_t> v);
  void set_data(const GraphTensor& t, std::span<const uint8_t> v);
  void set_data(const GraphTensor& t, std::span<const int8_t> v);
  /// Raw bytes in the tensor's dtype.
  void set_bytes(const GraphTensor& t, std::span<const std::byte> bytes);
  /// A zero-filled owned input of `bytes` bytes.
  void set_zeros(const GraphTensor& t, size_t bytes);
  /// Zero-copy external device input (CUDA only; the caller owns the memory).
  virtual void set_device_ptr(const GraphTensor& t, void* ptr, size_t bytes);

  /// Runs the graph with these dynamic dimension values.
  virtual void execute(const DynMap& dyn = {}) = 0;

  /// Reads a result, converted to f32 (float dtypes only).
  std::vector<float> get_f32(const GraphTensor& t);
  /// Reads an I32 result.
  std::vector<int32_t> get_i32(const GraphTensor& t);
  /// Reads an I64 result.
  std::vector<int64_t> get_i64(const GraphTensor& t);
  /// Reads a result's raw bytes in its dtype.
  virtual std::vector<std::byte> get_bytes(const GraphTensor& t) = 0;

  /// Moves a tensor's buffer out (the runtime forgets it).
  virtual Buffer remove_buffer(const GraphTensor& t) = 0;
  /// Moves a buffer in as the data of an Input (owned again by the runtime).
  virtual void set_buffer(const GraphTensor& t, Buffer b) = 0;

  /// Host-side ops the loaded plan runs per execute (for --stats).
  virtual std::vector<std::string> host_ops() const { return {}; }
  /// Kernels the loaded plan launches per execute.
  virtual size_t kernel_count() const { return 0; }
  /// The graph this runtime runs.
  const Graph& graph() const { return graph_; }

  /// Stores owned bytes for an Input node (already checked for dtype and size; the loaders' and
  /// set_data's common path).
  virtual void upload(NodeId input, std::span<const std::byte> bytes, bool persist) = 0;
  /// Uploads validated checkpoint tensors as persisted inputs in the backend's own way (streamed,
  /// converted on the way, memory checked first) and returns true; false (the default) lets
  /// load_safetensors convert each on the host and upload() it. On failure every item is unbound.
  virtual bool load_items(const std::vector<LoadItem>& items, const LoadOptions& opts) {
    (void)items;
    (void)opts;
    return false;
  }
  /// Drops whatever data an input holds (best effort; never throws).
  void unbind_noexcept(NodeId input) noexcept;

 protected:
  /// The Input node behind t, or a "[op] tensor is not an Input" error.
  NodeId input_node(const GraphTensor& t, const char* op) const;
  /// The node whose buffer holds t's data (t's node, which must be an Output or Input).
  NodeId result_node(const GraphTensor& t, const char* op) const;

  const Graph& graph_;
};

}  // namespace luminal
