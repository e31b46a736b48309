// Private helpers shared by the GraphTensor decompositions (src/core/tensor/*.cpp, src/core/nn/).
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "luminal/tensor.h"

namespace luminal::detail {

/// The tensor's graph; throws "[op] tensor is not attached to a graph" for a default tensor.
Graph& graph_of(const GraphTensor& t, std::string_view op);
/// Throws unless both tensors live in the same graph.
void check_same_graph(std::string_view op, const GraphTensor& a, const GraphTensor& b);
/// Throws "[op] dtype mismatch: f32 vs i32" unless the dtypes are equal.
void check_same_dtype(std::string_view op, const GraphTensor& a, const GraphTensor& b);
/// Throws "[op] requires a float dtype, got i32".
void require_float(std::string_view op, const GraphTensor& t);
/// axis in [-rank, rank) -> [0, rank); throws "[op] axis 3 out of range for rank 2".
int normalize_axis(std::string_view op, int axis, int rank);
/// Insertion position in [-(rank+1), rank] -> [0, rank].
int normalize_insert_axis(std::string_view op, int axis, int rank);
/// True when dim i of the view may hold padding (not provably unpadded).
bool dim_padded(const ShapeTracker& v, size_t i);

/// Appends a node of `kind` reading `inputs` through their views; output dims = `shape`.
GraphTensor make_node(OpKind kind, DType dtype, const std::vector<GraphTensor>& inputs,
                      std::vector<Expr> shape, int axis = -1);
/// A one-input elementwise node with the input's dims.
GraphTensor unary(OpKind kind, const GraphTensor& x, DType dtype);
/// Broadcasts a and b numpy-style to one shape (views only; shape errors tagged with op).
std::pair<GraphTensor, GraphTensor> broadcast_pair(std::string_view op, const GraphTensor& a,
                                                   const GraphTensor& b);
/// Broadcasts t to `shape` (views only); throws "[op] cannot broadcast [..] to [..]".
GraphTensor broadcast_to(std::string_view op, const GraphTensor& t, const std::vector<Expr>& shape);
/// A two-input elementwise node after dtype checks and broadcasting.
GraphTensor binary(OpKind kind, std::string_view op, const GraphTensor& a, const GraphTensor& b,
                   DType out_dtype);
/// A Constant of t's dtype (or `dtype`) broadcast (stride 0) to t's dims.
GraphTensor scalar_like(const GraphTensor& t, double v);
GraphTensor scalar_like(const GraphTensor& t, double v, DType dtype);
/// not c for a Bool tensor: LessThan(cast(c, i32), 1).
GraphTensor logical_not(const GraphTensor& c);
/// cast(c, x.dtype) * x + cast(not c, x.dtype) * y (Bool c; exact for finite values).
GraphTensor select(const GraphTensor& c, const GraphTensor& x, const GraphTensor& y);
/// Re-inserts a reduced axis as a broadcast (stride 0) dim of `size`.
GraphTensor unreduce(const GraphTensor& r, int axis, const Expr& size);

}  // namespace luminal::detail
