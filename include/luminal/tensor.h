// GraphTensor: a lazy tensor (a node plus a view of it). Operations append nodes; views append
// nothing.
#pragma once

#include <initializer_list>
#include <memory>
#include <vector>

#include "luminal/graph.h"

namespace luminal {

/// A lazy tensor: the node that produces the data and the view through which it is read.
/// Errors are exceptions tagged with the op: "[add] dtype mismatch: f32 vs i32".
class GraphTensor {
 public:
  Graph* graph = nullptr;
  NodeId id = 0;
  ShapeTracker view;
  DType dtype = DType::F32;

  GraphTensor() = default;
  /// A contiguous view of a node's whole output.
  GraphTensor(Graph* g, NodeId node);

  // ---- metadata ----
  /// Logical dims.
  const std::vector<Expr>& dims() const { return view.dims; }
  /// Number of dims.
  int rank() const { return static_cast<int>(view.dims.size()); }
  /// The producing node.
  const Node& node() const { return graph->node(id); }

  // ---- marking ----
  /// Marks this tensor as a result: replaces *this with an Output node reading it. Returns *this.
  GraphTensor& output();
  /// Marks this tensor as the next value of `state`, an Input of the same shape and dtype (a KV
  /// cache): after each execute() the input holds it; the input is persisted (never consumed).
  /// Replaces *this with that Output, which get_* refuses (read the input). On CUDA a Scatter
  /// into the input is then done in place. If execute() throws, the state is not restored: the
  /// CPU runtime leaves the input without data, CUDA may have written part of the update; set
  /// the state again before retrying. Returns *this.
  GraphTensor& output_into(const GraphTensor& state);
  /// Keeps this Input's buffer alive across execute() (weights). Returns *this.
  GraphTensor& persist();

  // ---- elementwise (operands broadcast numpy-style; dtypes must match) ----
  GraphTensor operator+(const GraphTensor& o) const;
  GraphTensor operator-(const GraphTensor& o) const;
  GraphTensor operator*(const GraphTensor& o) const;
  GraphTensor operator/(const GraphTensor& o) const;
  GraphTensor operator%(const GraphTensor& o) const;
  GraphTensor operator-() const;
  /// Scalar forms: the scalar becomes a Constant of this tensor's dtype.
  GraphTensor operator+(double s) const;
  GraphTensor operator-(double s) const;
  GraphTensor operator*(double s) const;
  GraphTensor operator/(double s) const;
  /// Bool results: out = this < o, etc.
  GraphTensor lt(const GraphTensor& o) const;
  GraphTensor gt(const GraphTensor& o) const;
  GraphTensor le(const GraphTensor& o) const;
  GraphTensor ge(const GraphTensor& o) const;
  GraphTensor eq(const GraphTensor& o) const;
  GraphTensor ne(const GraphTensor& o) const;
  /// Elementwise max / min of two tensors.
  GraphTensor maximum(const GraphTensor& o) const;
  GraphTensor minimum(const GraphTensor& o) const;
  /// Comparisons with a scalar.
  GraphTensor lt(double s) const;
  GraphTensor gt(double s) const;

  // ---- math ----
  GraphTensor exp() const;
  GraphTensor log() const;
  GraphTensor exp2() const;
  GraphTensor log2() const;
  GraphTensor sin() const;
  GraphTensor cos() const;
  GraphTensor sqrt() const;
  GraphTensor recip() const;
  GraphTensor abs() const;
  /// this ** e for positive bases (exp2(e * log2(x))).
  GraphTensor pow(double e) const;
  GraphTensor pow(const GraphTensor& e) const;
  /// Gauss error function (float dtypes; |error| <= 1.2e-7 in f32, see src/core/tensor/erf.cpp).
  GraphTensor erf() const;
  /// 1 - erf(x), relative-accurate for large x (no cancellation).
  GraphTensor erfc() const;
  /// Explicit conversion.
  GraphTensor cast(DType dt) const;
  /// Alias of cast.
  GraphTensor as_dtype(DType dt) const { return cast(dt); }

  // ---- activations and normalization ----
  GraphTensor relu() const;
  GraphTensor sigmoid() const;
  GraphTensor silu() const;
  /// Alias of silu.
  GraphTensor swish() const { return silu(); }
  /// tanh-approximated GELU (PyTorch gelu(approximate="tanh")).
  GraphTensor gelu() const;
  /// Exact GELU, x/2 * (1 + erf(x / sqrt 2)) (PyTorch gelu(approximate="none")).
  GraphTensor gelu_erf() const;
  GraphTensor tanh() const;
  /// softmax over axis (negative counts from the end), max-subtracted.
  GraphTensor softmax(int axis) const;
  /// log(softmax(x)) over axis, as (x - max) - log(sum(exp(x - max))) (no log of a rounded 0).
  GraphTensor log_softmax(int axis) const;
  /// (x - mean) / sqrt(var + eps) over axis (no affine; nn adds weight and bias).
  GraphTensor layer_norm(int axis, double eps = 1e-5) const;
  /// x / sqrt(mean(x^2) + eps) over axis.
  GraphTensor rms_norm(int axis, double eps = 1e-6) const;

  // ---- reductions (the axis is removed) ----
  GraphTensor sum(int axis) const;
  GraphTensor max(int axis) const;
  GraphTensor mean(int axis) const;

  // ---- matmul ----
  /// numpy-style matmul for 1-D to 5-D operands (leading dims broadcast; any views).
  GraphTensor matmul(const GraphTensor& o) const;

  // ---- movement (views unless noted) ----
  GraphTensor permute(std::vector<int> order) const;
  GraphTensor transpose(int a, int b) const;
  /// Inserts a broadcast dim of `size` at axis.
  GraphTensor expand_dim(int axis, Expr size) const;
  /// Broadcasts to shape (numpy rules: leading dims added, size-1 dims stretched).
  GraphTensor expand_to(const std::vector<Expr>& shape) const;
  /// Splits axis into [dim / inner, inner].
  GraphTensor split_dims(int axis, Expr inner) const;
  /// Merges axis and axis+1 (copies first when the view does not allow it).
  GraphTensor merge_dims(int axis) const;
  /// Row-major reshape (copies first when not contiguous).
  GraphTensor reshape(const std::vector<Expr>& shape) const;
  /// Keeps [start, end) of axis.
  GraphTensor slice(int axis, Expr start, Expr end) const;
  /// Pads axis with lo zeros before and hi zeros after.
  GraphTensor pad(int axis, Expr lo, Expr hi) const;
  /// Concatenates along axis (pads both and adds; the data is copied).
  GraphTensor concat_along(const GraphTensor& o, int axis) const;
  /// A row-major materialized copy (no-op if already contiguous).
  GraphTensor contiguous() const;

  // ---- indexing ----
  /// out[i..., j...] = this[idx[i...], j...] (rows of axis 0).
  GraphTensor gather(const GraphTensor& idx) const;
  /// out = this with out[idx[n], j...] = src[n, j...] (rows of axis 0; duplicate indices: one
  /// wins).
  GraphTensor scatter(const GraphTensor& idx, const GraphTensor& src) const;
};

/// Scalar-on-the-left forms.
GraphTensor operator+(double s, const GraphTensor& t);
GraphTensor operator-(double s, const GraphTensor& t);
GraphTensor operator*(double s, const GraphTensor& t);
GraphTensor operator/(double s, const GraphTensor& t);

/// Concatenates tensors along axis.
GraphTensor concat(const std::vector<GraphTensor>& parts, int axis);

/// out = cond ? x : y elementwise (all three broadcast numpy-style; cond Bool, x and y of one
/// dtype). Exact for every value: the chosen element is read, never multiplied by a 0/1 mask, so
/// infinities and NaN in the branch not taken do not leak (masks filled with -inf stay -inf).
GraphTensor where(const GraphTensor& cond, const GraphTensor& x, const GraphTensor& y);

/// Builds a Custom node; see custom_op.h.
GraphTensor custom_op(std::shared_ptr<const CustomOp> op, const std::vector<GraphTensor>& inputs);

}  // namespace luminal
