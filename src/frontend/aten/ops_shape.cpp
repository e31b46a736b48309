// Views, copies and joins: view/reshape, permute/transpose/t, expand, squeeze/unsqueeze,
// select/slice/narrow, flatten, cat/stack, sym_size, and the ops that are the identity for
// inference (clone, alias, contiguous, detach, lift_fresh_copy). Target shapes come from the
// exported metadata, which has -1 resolved and symbolic sizes spelled out.
#include <climits>

#include <fmt/format.h>

#include "frontend/aten/shape_util.h"

namespace luminal::aten {

int norm_dim(const AtenNode& n, int64_t dim, int rank, const char* arg) {
  const int64_t d = dim < 0 ? dim + rank : dim;
  if (d < 0 || d >= rank) n.fail(fmt::format("{} {} out of range for rank {}", arg, dim, rank));
  return static_cast<int>(d);
}

GraphTensor drop_unit_dim(const GraphTensor& t, int axis) {
  std::vector<Expr> dims = t.dims();
  dims.erase(dims.begin() + axis);
  if (t.view.pad_lo[axis].as_const() != 0 || t.view.pad_hi[axis].as_const() != 0)
    return t.reshape(dims);
  GraphTensor out = t;
  ShapeTracker& v = out.view;
  v.dims.erase(v.dims.begin() + axis);
  v.strides.erase(v.strides.begin() + axis);
  v.pad_lo.erase(v.pad_lo.begin() + axis);
  v.pad_hi.erase(v.pad_hi.begin() + axis);
  return out;
}

GraphTensor reshape_to(const GraphTensor& t, const std::vector<Expr>& dims) {
  if (dims.size() == t.dims().size()) {
    bool same = true;
    for (size_t i = 0; same && i < dims.size(); ++i) same = dims[i].same(t.dims()[i]);
    if (same) return t;
  }
  return t.reshape(dims);
}

Expr clamp_bound(const Expr& v, const Expr& size) {
  if (auto c = v.as_const()) {
    if (*c == 0)
      return v;  // sizes are never negative: min(0, s) = 0 keeps `x[:]` at s, not a min()
    if (*c >= INT64_MAX / 2) return size;
    if (*c < 0) return max(size + Expr(*c), Expr(0));
  }
  return min(v, size);
}

void lower_identity(AtenNode& n) { n.set_output(n.tensor("self")); }

// view / reshape / _unsafe_view (self, size).
void lower_view(AtenNode& n) { n.set_output(reshape_to(n.tensor("self"), n.out_dims())); }

// sym_size.int (self, dim): the dim's size expression ("s0" for a dynamic batch), which later
// view/reshape sizes refer to.
void lower_sym_size(AtenNode& n) {
  const GraphTensor t = n.tensor("self");
  n.set_sym_int(t.dims()[size_t(norm_dim(n, n.int_("dim"), t.rank(), "dim"))]);
}

void lower_flatten(AtenNode& n) { n.set_output(reshape_to(n.tensor("self"), n.out_dims())); }

void lower_permute(AtenNode& n) {
  const GraphTensor t = n.tensor("self");
  std::vector<int> order;
  for (int64_t d : n.ints("dims")) order.push_back(norm_dim(n, d, t.rank(), "dims"));
  n.set_output(t.permute(order));
}

void lower_transpose(AtenNode& n) {
  const GraphTensor t = n.tensor("self");
  if (t.rank() == 0) return n.set_output(t);
  n.set_output(
      t.transpose(norm_dim(n, n.int_("dim0"), t.rank()), norm_dim(n, n.int_("dim1"), t.rank())));
}

void lower_t(AtenNode& n) {
  const GraphTensor t = n.tensor("self");
  if (t.rank() > 2) n.fail(fmt::format("expects at most 2-D, got {}", shape_string(t.dims())));
  n.set_output(t.rank() == 2 ? t.transpose(0, 1) : t);
}

// expand(self, size): new leading dims and size-1 dims stretched (stride 0).
void lower_expand(AtenNode& n) { n.set_output(n.tensor("self").expand_to(n.out_dims())); }

void lower_unsqueeze(AtenNode& n) {
  const GraphTensor t = n.tensor("self");
  int64_t d = n.int_("dim");
  if (d < 0) d += t.rank() + 1;
  if (d < 0 || d > t.rank())
    n.fail(fmt::format("dim {} out of range for rank {}", n.int_("dim"), t.rank()));
  n.set_output(t.expand_dim(static_cast<int>(d), 1));
}

// squeeze(self), squeeze(self, dim), squeeze(self, dims): drops the named size-1 dims (all when
// none are named); a named dim that is not 1 stays, as in PyTorch.
void lower_squeeze(AtenNode& n) {
  GraphTensor t = n.tensor("self");
  std::vector<bool> drop(t.rank(), false);
  if (n.has("dim") || n.has("dims")) {
    for (int64_t d : n.ints(n.has("dim") ? "dim" : "dims")) {
      const int a = norm_dim(n, d, t.rank());
      drop[a] = t.dims()[a].as_const() == 1;
    }
  } else {
    for (int a = 0; a < t.rank(); ++a) drop[a] = t.dims()[a].as_const() == 1;
  }
  for (int a = t.rank(); a-- > 0;)
    if (drop[a]) t = drop_unit_dim(t, a);
  n.set_output(t);
}

// select(self, dim, index): the index-th slice of dim, which is removed.
void lower_select(AtenNode& n) {
  const GraphTensor t = n.tensor("self");
  const int a = norm_dim(n, n.int_("dim"), t.rank());
  Expr i = n.sym_int("index");
  if (auto c = i.as_const(); c && *c < 0) i = t.dims()[a] + i;
  n.set_output(drop_unit_dim(t.slice(a, i, i + 1), a));
}

// Every step-th element of [start, end) along axis a (step >= 1).
GraphTensor strided_slice(const GraphTensor& t, int a, const Expr& start, const Expr& end,
                          int64_t step) {
  if (step == 1) return t.slice(a, start, end);
  const Expr len = (end - start + Expr(step - 1)) / Expr(step);
  // Pad so that [start, start + len * step) is in range, then keep index 0 of each step group.
  const Expr need = start + len * Expr(step);
  GraphTensor padded = t.pad(a, 0, max(need - t.dims()[a], Expr(0)));
  GraphTensor s = padded.slice(a, start, need).split_dims(a, Expr(step));
  return drop_unit_dim(s.slice(a + 1, 0, 1), a + 1);
}

// slice.Tensor(self, dim=0, start=None, end=None, step=1), Python slice semantics.
void lower_slice(AtenNode& n) {
  const GraphTensor t = n.tensor("self");
  const int a = norm_dim(n, n.int_("dim", 0), t.rank());
  const Expr size = t.dims()[a];
  const Expr start = clamp_bound(n.sym_int("start", Expr(0)), size);
  const Expr clamped_end = clamp_bound(n.sym_int("end", Expr(INT64_MAX)), size);
  // A clamped end is never negative, so with start 0 (`x[:n]`) no max() is needed.
  const Expr end = start.as_const() == 0 ? clamped_end : max(clamped_end, start);
  const int64_t step = n.int_("step", 1);
  if (step < 1) n.fail(fmt::format("step must be positive, got {}", step));
  n.set_output(strided_slice(t, a, start, end, step));
}

// narrow(self, dim, start, length).
void lower_narrow(AtenNode& n) {
  const GraphTensor t = n.tensor("self");
  const int a = norm_dim(n, n.int_("dim"), t.rank());
  Expr start = n.sym_int("start");
  if (auto c = start.as_const(); c && *c < 0) start = t.dims()[a] + start;
  n.set_output(t.slice(a, start, start + n.sym_int("length")));
}

// cat(tensors, dim=0); 1-D empty tensors are skipped (PyTorch's legacy rule).
void lower_cat(AtenNode& n) {
  // torch.cat promotes mixed dtypes (torchrec's bf16 dense features beside its f32 pooled
  // embeddings) to the result's dtype, as recorded.
  const DType out = n.out_dtype();
  std::vector<GraphTensor> parts;
  for (const GraphTensor& t : n.tensors("tensors"))
    if (!(t.rank() == 1 && t.dims()[0].as_const() == 0)) parts.push_back(t.dtype == out ? t : t.cast(out));
  if (parts.empty()) n.fail("every input is empty");
  if (parts.size() == 1) return n.set_output(parts[0]);
  n.set_output(concat(parts, norm_dim(n, n.int_("dim", 0), parts[0].rank())));
}

// stack(tensors, dim=0) = cat of each unsqueezed at dim.
void lower_stack(AtenNode& n) {
  const std::vector<GraphTensor> ts = n.tensors("tensors");
  if (ts.empty()) n.fail("needs at least one tensor");
  int64_t d = n.int_("dim", 0);
  if (d < 0) d += ts[0].rank() + 1;
  if (d < 0 || d > ts[0].rank()) n.fail(fmt::format("dim {} out of range", n.int_("dim", 0)));
  std::vector<GraphTensor> parts;
  for (const GraphTensor& t : ts) parts.push_back(t.expand_dim(static_cast<int>(d), 1));
  n.set_output(parts.size() == 1 ? parts[0] : concat(parts, static_cast<int>(d)));
}

}  // namespace luminal::aten
