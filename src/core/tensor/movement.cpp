// Movement: views (no nodes) plus the copies that merge_dims, reshape, contiguous and concat need.
#include <algorithm>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "core/tensor/helpers.h"

namespace luminal {

namespace {

GraphTensor with_view(const GraphTensor& t, ShapeTracker v) {
  GraphTensor out = t;
  out.view = std::move(v);
  return out;
}

// Throws when both are constants and lo > hi (or negative).
void check_order(std::string_view op, const Expr& lo, const Expr& hi, std::string_view what) {
  auto l = lo.as_const(), h = hi.as_const();
  if ((l && *l < 0) || (l && h && *l > *h)) {
    throw std::invalid_argument(
        fmt::format("[{}] bad {}: {} .. {}", op, what, lo.to_string(), hi.to_string()));
  }
}

}  // namespace

GraphTensor GraphTensor::permute(std::vector<int> order) const {
  detail::graph_of(*this, "permute");
  std::vector<int> seen(rank(), 0);
  bool ok = static_cast<int>(order.size()) == rank();
  for (int& o : order) {
    if (!ok) break;
    if (o < 0) o += rank();
    ok = o >= 0 && o < rank() && seen[o]++ == 0;
  }
  if (!ok) {
    throw std::invalid_argument(
        fmt::format("[permute] order is not a permutation of {} axes "
                    "(shape {})",
                    rank(), shape_string(dims())));
  }
  return with_view(*this, view.permute(order));
}

GraphTensor GraphTensor::transpose(int a, int b) const {
  detail::graph_of(*this, "transpose");
  const int x = detail::normalize_axis("transpose", a, rank());
  const int y = detail::normalize_axis("transpose", b, rank());
  std::vector<int> order(rank());
  for (int i = 0; i < rank(); ++i) order[i] = i;
  std::swap(order[x], order[y]);
  return with_view(*this, view.permute(order));
}

GraphTensor GraphTensor::expand_dim(int axis, Expr size) const {
  detail::graph_of(*this, "expand_dim");
  const int a = detail::normalize_insert_axis("expand_dim", axis, rank());
  check_order("expand_dim", 0, size, "size");
  return with_view(*this, view.expand(a, std::move(size)));
}

GraphTensor GraphTensor::expand_to(const std::vector<Expr>& shape) const {
  detail::graph_of(*this, "expand_to");
  return detail::broadcast_to("expand_to", *this, shape);
}

GraphTensor GraphTensor::split_dims(int axis, Expr inner) const {
  detail::graph_of(*this, "split_dims");
  const int a = detail::normalize_axis("split_dims", axis, rank());
  auto d = dims()[a].as_const(), i = inner.as_const();
  if ((i && *i <= 0) || (d && i && *d % *i != 0)) {
    throw std::invalid_argument(fmt::format("[split_dims] dim {} of {} is not divisible by {}", a,
                                            shape_string(dims()), inner.to_string()));
  }
  if (auto v = view.split(a, inner)) return with_view(*this, std::move(*v));
  GraphTensor c = contiguous();
  return with_view(c, c.view.split(a, inner).value());
}

GraphTensor GraphTensor::merge_dims(int axis) const {
  detail::graph_of(*this, "merge_dims");
  if (axis < 0) axis += rank();  // -2 merges the last two dims
  if (axis < 0 || axis + 1 >= rank()) {
    throw std::invalid_argument(fmt::format("[merge_dims] axis {} has no next axis in shape {}",
                                            axis, shape_string(dims())));
  }
  if (auto v = view.merge(axis)) return with_view(*this, std::move(*v));
  GraphTensor c = contiguous();
  return with_view(c, c.view.merge(axis).value());
}

GraphTensor GraphTensor::reshape(const std::vector<Expr>& shape) const {
  detail::graph_of(*this, "reshape");
  auto have = view.numel().as_const(), want = product(shape).as_const();
  if (have && want && *have != *want) {
    throw std::invalid_argument(fmt::format("[reshape] cannot reshape {} ({} elements) to {} ({})",
                                            shape_string(dims()), *have, shape_string(shape),
                                            *want));
  }
  GraphTensor c = contiguous();
  return with_view(c, ShapeTracker::contiguous(shape));
}

GraphTensor GraphTensor::slice(int axis, Expr start, Expr end) const {
  detail::graph_of(*this, "slice");
  const int a = detail::normalize_axis("slice", axis, rank());
  check_order("slice", start, end, "range");
  check_order("slice", end, dims()[a], "end for the dim");
  return with_view(*this, view.slice(a, std::move(start), std::move(end)));
}

GraphTensor GraphTensor::pad(int axis, Expr lo, Expr hi) const {
  detail::graph_of(*this, "pad");
  const int a = detail::normalize_axis("pad", axis, rank());
  check_order("pad", 0, lo, "low padding");
  check_order("pad", 0, hi, "high padding");
  return with_view(*this, view.pad(a, std::move(lo), std::move(hi)));
}

namespace {

// Throws unless o can be concatenated to t along axis a (same graph, dtype, rank, other dims).
void check_concat_part(const GraphTensor& t, const GraphTensor& o, int a) {
  detail::check_same_graph("concat", t, o);
  detail::check_same_dtype("concat", t, o);
  bool ok = o.rank() == t.rank();
  for (int i = 0; ok && i < t.rank(); ++i) ok = i == a || t.dims()[i].same(o.dims()[i]);
  if (!ok) {
    throw std::invalid_argument(fmt::format("[concat] shapes {} and {} differ off axis {}",
                                            shape_string(t.dims()), shape_string(o.dims()), a));
  }
}

}  // namespace

// Each part is zero-padded to the full length along axis; one Add joins them.
GraphTensor GraphTensor::concat_along(const GraphTensor& o, int axis) const {
  return concat({*this, o}, axis);
}

// A flat sum of parts, each padded once to the full length (never a padded partial sum): every
// part is one padded read, so codegen can select the one part an output element comes from.
GraphTensor concat(const std::vector<GraphTensor>& parts, int axis) {
  if (parts.empty()) throw std::invalid_argument("[concat] no tensors to concatenate");
  detail::graph_of(parts[0], "concat");
  const int a = detail::normalize_axis("concat", axis, parts[0].rank());
  Expr total = 0;
  for (const GraphTensor& p : parts) {
    check_concat_part(parts[0], p, a);
    total = total + p.dims()[a];
  }
  if (parts.size() == 1) return parts[0];
  Expr start = 0;
  std::optional<GraphTensor> out;
  for (const GraphTensor& p : parts) {
    const Expr end = start + p.dims()[a];
    GraphTensor padded = p.pad(a, start, total - end);
    out = out ? *out + padded : padded;
    start = end;
  }
  return *out;
}

// Materializes through a Cast to the same dtype (the copy primitive); free when already contiguous.
GraphTensor GraphTensor::contiguous() const {
  detail::graph_of(*this, "contiguous");
  if (view.is_contiguous()) return *this;
  return cast(dtype);
}

}  // namespace luminal
