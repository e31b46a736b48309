// ShapeTracker: a view (dims, strides, offset, padding) over a contiguous buffer. Views never copy.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "luminal/expr.h"

namespace luminal {

/// A view resolved against a DynMap: every Expr evaluated.
struct ConcreteView {
  std::vector<int64_t> dims, strides, pad_lo, pad_hi;
  int64_t offset = 0;
  /// Total logical elements.
  int64_t numel() const;
  /// Flat source offset of a logical index, or nullopt when it falls in padding (reads as 0).
  std::optional<int64_t> source_offset(std::span<const int64_t> idx) const;
  /// Flat source offset of the i-th logical element in row-major order (nullopt in padding).
  std::optional<int64_t> source_offset_flat(int64_t i) const;
  /// True when the view reads a row-major buffer in order with no padding.
  bool is_contiguous() const;
};

/// A view over a buffer: logical index i maps to offset + sum((i_d - pad_lo_d) * stride_d),
/// and reads zero where i_d < pad_lo_d or i_d >= dims_d - pad_hi_d.
struct ShapeTracker {
  std::vector<Expr> dims;
  std::vector<Expr> strides;  // element strides; 0 means broadcast
  std::vector<Expr> pad_lo, pad_hi;
  Expr offset = 0;

  /// A row-major view of a buffer with these dims.
  static ShapeTracker contiguous(std::vector<Expr> dims);
  /// Number of dims.
  size_t rank() const { return dims.size(); }
  /// Product of dims.
  Expr numel() const;
  /// True when any dim may have padding (a pad that is not the constant 0).
  bool has_padding() const;
  /// True when statically known to be row-major contiguous with no offset or padding.
  bool is_contiguous() const;

  /// Reorders dims: new dim i is old dim order[i].
  ShapeTracker permute(std::span<const int> order) const;
  /// Inserts a broadcast dim (stride 0) of the given size at axis.
  ShapeTracker expand(int axis, Expr size) const;
  /// Keeps indices [start, end) of axis.
  ShapeTracker slice(int axis, Expr start, Expr end) const;
  /// Adds lo zeros before and hi zeros after axis.
  ShapeTracker pad(int axis, Expr lo, Expr hi) const;
  /// Splits axis into [dims/inner, inner]; nullopt if the axis is padded.
  std::optional<ShapeTracker> split(int axis, Expr inner) const;
  /// Merges axis and axis+1 into one dim; nullopt when the strides do not allow it without a copy.
  std::optional<ShapeTracker> merge(int axis) const;

  /// Every Expr evaluated against dyn.
  ConcreteView resolve(const DynMap& dyn) const;
};

}  // namespace luminal
