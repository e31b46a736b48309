// Private interface of the CPU reference kernels: host buffers, typed element access, one entry
// per op family. Kernels iterate over the output's logical indices and read inputs through views.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "luminal/reference.h"
#include "luminal/graph.h"
#include "luminal/shape.h"
#include "luminal/tensor.h"

namespace luminal::reference {

/// A node's output (or an input's data) on the host: row-major bytes of `dims` x `dtype`.
struct HostTensor {
  std::vector<std::byte> bytes;
  std::vector<int64_t> dims;
  DType dtype = DType::F32;
  /// Number of elements the bytes hold.
  int64_t numel() const { return static_cast<int64_t>(bytes.size() / dtype_size(dtype)); }
};

/// An op input: the producer's buffer read through the consuming node's view of it.
struct Operand {
  const HostTensor* src = nullptr;
  ConcreteView view;
  NodeId producer = 0;
  /// Element offset of a logical index in src, nullopt in padding; throws when it falls outside
  /// src.
  std::optional<int64_t> offset(std::span<const int64_t> idx) const;
  /// The element at idx as a double (0 in padding).
  double load_f(std::span<const int64_t> idx) const;
  /// The element at idx as an int64 (0 in padding; floats truncate).
  int64_t load_i(std::span<const int64_t> idx) const;
  /// Copies the element at idx (dtype_size bytes, zeros in padding) to dst.
  void copy_element(std::span<const int64_t> idx, std::byte* dst) const;
  /// The producer's dtype.
  DType dtype() const { return src->dtype; }
};

/// Element i of a buffer of dtype dt, as a double.
double load_f64(const std::byte* base, DType dt, int64_t i);
/// Element i of a buffer of dtype dt, as an int64 (Bool is 0/1; floats truncate toward zero).
int64_t load_i64(const std::byte* base, DType dt, int64_t i);
/// Stores v as dtype dt: floats round to nearest even, ints truncate toward zero (NaN -> 0,
/// saturating to int64 then wrapping to the width), Bool is v != 0.
void store_f64(std::byte* base, DType dt, int64_t i, double v);
/// Stores v as dtype dt: floats convert (16-bit types via float, as PyTorch), ints wrap, Bool is v
/// != 0.
void store_i64(std::byte* base, DType dt, int64_t i, int64_t v);

/// Advances a row-major multi-index over dims; returns false after the last index.
bool next_index(std::vector<int64_t>& idx, std::span<const int64_t> dims);
/// Number of elements of dims (1 for rank 0).
int64_t numel_of(std::span<const int64_t> dims);
/// Calls f(idx, flat) for every logical index of dims in row-major order (none when a dim is 0).
template <class F>
void for_each_index(std::span<const int64_t> dims, F&& f) {
  if (numel_of(dims) == 0) return;
  std::vector<int64_t> idx(dims.size(), 0);
  int64_t flat = 0;
  do {
    f(std::span<const int64_t>(idx), flat++);
  } while (next_index(idx, dims));
}
/// "[2, 3]".
std::string dims_string(std::span<const int64_t> dims);

/// Everything a kernel needs to compute one node.
struct KernelContext {
  const Graph& graph;
  NodeId id;
  const Node& node;
  std::vector<Operand> in;
  HostTensor& out;  // dims and dtype set, bytes zero-filled
  const DynMap& dyn;
  /// Scatter: out already holds dest (its buffer was handed over), so only the rows are written.
  bool dest_in_out = false;

  /// "node 7 (Gather)", for error messages.
  std::string where() const;
  /// Throws unless input i's view has exactly these dims.
  void expect_dims(size_t i, std::span<const int64_t> dims) const;
};

/// Cast, Exp2, Log2, Sin, Sqrt, Recip, Add, Mul, Mod, LessThan, Constant, Iota, Output.
void run_elementwise(const KernelContext& k);
/// SumReduce, MaxReduce.
void run_reduce(const KernelContext& k);
/// Gather.
void run_gather(const KernelContext& k);
/// Scatter.
void run_scatter(const KernelContext& k);

/// A Custom node's reference decomposition, built once and run by a nested ReferenceRuntime.
struct CustomScratch {
  std::unique_ptr<Graph> graph;
  std::vector<GraphTensor> inputs;
  GraphTensor result;
  std::unique_ptr<ReferenceRuntime> runtime;
};
/// Scratch graphs per Custom node id.
using CustomCache = std::map<NodeId, std::unique_ptr<CustomScratch>>;
/// Custom: runs the op's decomposition on the inputs' data.
void run_custom(const KernelContext& k, CustomCache& cache);

}  // namespace luminal::reference
