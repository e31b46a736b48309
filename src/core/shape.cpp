// ShapeTracker view algebra (permute, expand, slice, pad, split, merge) and resolved views.
#include "luminal/shape.h"

#include <fmt/format.h>

#include <stdexcept>

namespace luminal {

namespace {

void check_axis(int axis, size_t limit, size_t rank) {
  if (axis < 0 || static_cast<size_t>(axis) >= limit)
    throw std::out_of_range(fmt::format("[shape] axis {} out of range for rank {}", axis, rank));
}

bool is_zero(const Expr& e) {
  auto c = e.as_const();
  return c && *c == 0;
}

bool is_one(const Expr& e) {
  auto c = e.as_const();
  return c && *c == 1;
}

// Throws when a constant slice bound falls outside [0, dim] or start > end.
void check_slice(const ShapeTracker& st, int axis, const Expr& start, const Expr& end) {
  auto s = start.as_const(), e = end.as_const(), d = st.dims[axis].as_const();
  bool bad = (s && *s < 0) || (e && d && *e > *d) || (s && e && *s > *e) || (s && d && *s > *d);
  if (bad)
    throw std::out_of_range(fmt::format("[slice] range [{}, {}) out of bounds for axis {} of {}",
                                        start.to_string(), end.to_string(), axis,
                                        shape_string(st.dims)));
}

}  // namespace

ShapeTracker ShapeTracker::contiguous(std::vector<Expr> dims) {
  ShapeTracker st;
  size_t n = dims.size();
  st.strides.assign(n, Expr(0));
  Expr acc = 1;
  for (size_t i = n; i-- > 0;) {
    st.strides[i] = acc;
    acc = acc * dims[i];
  }
  st.pad_lo.assign(n, Expr(0));
  st.pad_hi.assign(n, Expr(0));
  st.dims = std::move(dims);
  return st;
}

Expr ShapeTracker::numel() const { return product(dims); }

bool ShapeTracker::has_padding() const {
  for (size_t i = 0; i < rank(); ++i)
    if (!is_zero(pad_lo[i]) || !is_zero(pad_hi[i])) return true;
  return false;
}

bool ShapeTracker::is_contiguous() const {
  if (!is_zero(offset) || has_padding()) return false;
  Expr expected = 1;
  for (size_t i = rank(); i-- > 0;) {
    if (!is_one(dims[i]) && !strides[i].same(expected)) return false;
    expected = expected * dims[i];
  }
  return true;
}

ShapeTracker ShapeTracker::permute(std::span<const int> order) const {
  std::vector<bool> seen(rank(), false);
  bool ok = order.size() == rank();
  for (size_t i = 0; ok && i < order.size(); ++i) {
    int o = order[i];
    ok = o >= 0 && static_cast<size_t>(o) < rank() && !seen[o];
    if (ok) seen[o] = true;
  }
  if (!ok)
    throw std::invalid_argument(fmt::format("[permute] order [{}] is not a permutation of rank {}",
                                            fmt::join(order, ", "), rank()));
  ShapeTracker st;
  st.offset = offset;
  for (int o : order) {
    st.dims.push_back(dims[o]);
    st.strides.push_back(strides[o]);
    st.pad_lo.push_back(pad_lo[o]);
    st.pad_hi.push_back(pad_hi[o]);
  }
  return st;
}

ShapeTracker ShapeTracker::expand(int axis, Expr size) const {
  check_axis(axis, rank() + 1, rank());
  ShapeTracker st = *this;
  st.dims.insert(st.dims.begin() + axis, std::move(size));
  st.strides.insert(st.strides.begin() + axis, Expr(0));
  st.pad_lo.insert(st.pad_lo.begin() + axis, Expr(0));
  st.pad_hi.insert(st.pad_hi.begin() + axis, Expr(0));
  return st;
}

ShapeTracker ShapeTracker::slice(int axis, Expr start, Expr end) const {
  check_axis(axis, rank(), rank());
  check_slice(*this, axis, start, end);
  ShapeTracker st = *this;
  const Expr &lo = pad_lo[axis], &hi = pad_hi[axis], &d = dims[axis];
  // Indices skipped past the low padding move the offset; padding shrinks by what was cut.
  st.offset = offset + max(start - lo, Expr(0)) * strides[axis];
  st.pad_lo[axis] = max(lo - start, Expr(0));
  st.pad_hi[axis] = max(hi - (d - end), Expr(0));
  st.dims[axis] = end - start;
  return st;
}

ShapeTracker ShapeTracker::pad(int axis, Expr lo, Expr hi) const {
  check_axis(axis, rank(), rank());
  auto l = lo.as_const(), h = hi.as_const();
  if ((l && *l < 0) || (h && *h < 0))
    throw std::invalid_argument(fmt::format("[pad] negative padding ({}, {}) on axis {}",
                                            lo.to_string(), hi.to_string(), axis));
  ShapeTracker st = *this;
  st.dims[axis] = dims[axis] + lo + hi;
  st.pad_lo[axis] = pad_lo[axis] + lo;
  st.pad_hi[axis] = pad_hi[axis] + hi;
  return st;
}

std::optional<ShapeTracker> ShapeTracker::split(int axis, Expr inner) const {
  check_axis(axis, rank(), rank());
  auto in = inner.as_const(), d = dims[axis].as_const();
  if (in && *in <= 0)
    throw std::invalid_argument(fmt::format("[split] inner size {} must be positive", *in));
  if (in && d && *d % *in != 0)
    throw std::invalid_argument(
        fmt::format("[split] dim {} of axis {} is not divisible by {}", *d, axis, *in));
  if (!is_zero(pad_lo[axis]) || !is_zero(pad_hi[axis])) return std::nullopt;
  ShapeTracker st = *this;
  Expr stride = strides[axis];
  st.dims[axis] = dims[axis] / inner;
  st.strides[axis] = stride * inner;
  st.dims.insert(st.dims.begin() + axis + 1, inner);
  st.strides.insert(st.strides.begin() + axis + 1, stride);
  st.pad_lo.insert(st.pad_lo.begin() + axis + 1, Expr(0));
  st.pad_hi.insert(st.pad_hi.begin() + axis + 1, Expr(0));
  return st;
}

std::optional<ShapeTracker> ShapeTracker::merge(int axis) const {
  check_axis(axis, rank() == 0 ? 0 : rank() - 1, rank());
  size_t a = axis, b = a + 1;
  for (size_t i : {a, b})
    if (!is_zero(pad_lo[i]) || !is_zero(pad_hi[i])) return std::nullopt;
  Expr stride;
  if (is_one(dims[a])) {
    stride = strides[b];
  } else if (is_one(dims[b])) {
    stride = strides[a];
  } else if (strides[a].same(strides[b] * dims[b])) {
    stride = strides[b];
  } else {
    return std::nullopt;
  }
  ShapeTracker st = *this;
  st.dims[a] = dims[a] * dims[b];
  st.strides[a] = stride;
  st.dims.erase(st.dims.begin() + b);
  st.strides.erase(st.strides.begin() + b);
  st.pad_lo.erase(st.pad_lo.begin() + b);
  st.pad_hi.erase(st.pad_hi.begin() + b);
  return st;
}

ConcreteView ShapeTracker::resolve(const DynMap& dyn) const {
  ConcreteView v;
  v.dims = eval_all(dims, dyn);
  v.strides = eval_all(strides, dyn);
  v.pad_lo = eval_all(pad_lo, dyn);
  v.pad_hi = eval_all(pad_hi, dyn);
  v.offset = offset.eval(dyn);
  return v;
}

int64_t ConcreteView::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::optional<int64_t> ConcreteView::source_offset(std::span<const int64_t> idx) const {
  if (idx.size() != dims.size())
    throw std::invalid_argument(
        fmt::format("[shape] index of rank {} for a view of rank {}", idx.size(), dims.size()));
  int64_t off = offset;
  for (size_t d = 0; d < idx.size(); ++d) {
    int64_t i = idx[d] - pad_lo[d];
    if (i < 0 || idx[d] >= dims[d] - pad_hi[d]) return std::nullopt;
    off += i * strides[d];
  }
  return off;
}

std::optional<int64_t> ConcreteView::source_offset_flat(int64_t i) const {
  int64_t off = offset;
  // Peel indices from the innermost dim outwards (row-major order).
  for (size_t d = dims.size(); d-- > 0;) {
    int64_t id = dims[d] == 0 ? 0 : i % dims[d];
    i = dims[d] == 0 ? 0 : i / dims[d];
    int64_t j = id - pad_lo[d];
    if (j < 0 || id >= dims[d] - pad_hi[d]) return std::nullopt;
    off += j * strides[d];
  }
  return off;
}

bool ConcreteView::is_contiguous() const {
  if (offset != 0) return false;
  int64_t expected = 1;
  for (size_t d = dims.size(); d-- > 0;) {
    if (pad_lo[d] != 0 || pad_hi[d] != 0) return false;
    if (dims[d] != 1 && strides[d] != expected) return false;
    expected *= dims[d];
  }
  return true;
}

}  // namespace luminal
