// Reductions: sum, mean, amax/amin, max/min (values and first indices), argmax/argmin, any/all,
// prod, var/std (the scans cumsum and diff are in ops_scan.cpp). Built on SumReduce and MaxReduce:
// minima are max of the negation (floats) or of ~x = -1 - x (integers, which never overflows);
// 16-bit floats accumulate in f32 where torch does.
#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "frontend/aten/operands.h"
#include "frontend/aten/shape_util.h"

namespace luminal::aten {

namespace {

// The reduced axes, ascending: `name` absent, None or [] means every axis. A 0-d tensor accepts
// dim 0 / -1 and reduces nothing.
std::vector<int> axes_arg(AtenNode& n, const char* name, int rank) {
  std::vector<int64_t> dims = n.has(name) ? n.ints(name) : std::vector<int64_t>{};
  std::vector<int> axes;
  if (rank == 0) {
    for (int64_t d : dims)
      if (d != 0 && d != -1) n.fail(fmt::format("dim {} out of range for a 0-d tensor", d));
    return axes;
  }
  if (dims.empty())
    for (int a = 0; a < rank; ++a) axes.push_back(a);
  for (int64_t d : dims) axes.push_back(norm_dim(n, d, rank));
  std::sort(axes.begin(), axes.end());
  if (std::adjacent_find(axes.begin(), axes.end()) != axes.end())
    n.fail("a dim appears more than once in the reduction");
  return axes;
}

template <class F>
GraphTensor reduce_axes(GraphTensor x, const std::vector<int>& axes, F f) {
  for (auto a = axes.rbegin(); a != axes.rend(); ++a) x = f(x, *a);
  return x;
}

GraphTensor keep_dims(GraphTensor r, const std::vector<int>& axes, bool keepdim) {
  if (keepdim)
    for (int a : axes) r = r.expand_dim(a, 1);
  return r;
}

GraphTensor cast_to(const GraphTensor& x, DType dt) { return x.dtype == dt ? x : x.cast(dt); }

// ~x for integers (order-reversing, no overflow), -x for floats.
GraphTensor flip(const GraphTensor& x) {
  if (!is_integer(x.dtype)) return -x;
  const double m = x.dtype == DType::U8 ? 255.0 : -1.0;
  return x * m + m;
}

// max (or min) over one axis; Bool through i32.
GraphTensor extreme(const GraphTensor& x, int a, bool is_max) {
  if (x.dtype == DType::Bool) return extreme(x.cast(DType::I32), a, is_max).cast(DType::Bool);
  return is_max ? x.max(a) : flip(flip(x).max(a));
}

GraphTensor sum_axes(const GraphTensor& x, const std::vector<int>& axes) {
  return reduce_axes(x, axes, [](const GraphTensor& t, int a) { return t.sum(a); });
}

// mean over axes (float x): sum * (1 / count), the count symbolic when a reduced dim is.
GraphTensor mean_axes(const GraphTensor& x, const std::vector<int>& axes) {
  Expr count = 1;
  for (int a : axes) count = count * x.dims()[a];
  const GraphTensor s = sum_axes(x, axes);
  if (auto c = count.as_const()) return s * (1.0 / static_cast<double>(*c));
  return s * sym_int_tensor(*x.graph, count, x.dtype).recip();
}

GraphTensor to_f32_if_half(const GraphTensor& x) {
  return x.dtype == DType::F16 || x.dtype == DType::BF16 ? x.cast(DType::F32) : x;
}

// x with axis a moved last (a view).
GraphTensor axis_last(const GraphTensor& x, int a) {
  std::vector<int> order;
  for (int i = 0; i < x.rank(); ++i)
    if (i != a) order.push_back(i);
  order.push_back(a);
  return x.permute(order);
}

// The first index along axis a where x equals its max (min); NaN counts as the extreme, as in
// torch. First = K - max(cond * (K - i)) with K = 2^62 > any index: no symbolic length needed.
GraphTensor arg_extreme(const GraphTensor& x, int a, bool is_max) {
  const GraphTensor xt = axis_last(x, a);
  const int last = xt.rank() - 1;
  const GraphTensor m = extreme(xt, last, is_max).expand_dim(last, xt.dims()[last]);
  GraphTensor hit = xt.eq(m);
  if (is_float(x.dtype)) hit = bool_or(hit, bool_and(xt.ne(xt), m.ne(m)));
  const double k = 4611686018427387904.0;  // 2^62, exact in f64 and i64
  const GraphTensor i = x.graph->arange(xt.dims()[last], DType::I64);
  const GraphTensor score = hit.cast(DType::I64) * (k - i);
  return k - score.max(last);
}

// max.dim / min.dim (self, dim, keepdim) -> (values, indices).
void values_indices(AtenNode& n, bool is_max) {
  const GraphTensor x = n.tensor("self");
  const std::vector<int> axes = axes_arg(n, "dim", x.rank());
  if (axes.empty()) {
    n.set_output(x, 0);
    return n.set_output(x.graph->constant(0.0, DType::I64), 1);
  }
  const bool keepdim = n.bool_("keepdim", false);
  n.set_output(keep_dims(extreme(x, axes[0], is_max), axes, keepdim), 0);
  n.set_output(keep_dims(arg_extreme(x, axes[0], is_max), axes, keepdim), 1);
}

// argmax / argmin (self, dim=None, keepdim=False); dim None: over the flattened tensor.
void arg(AtenNode& n, bool is_max) {
  const GraphTensor x = n.tensor("self");
  if (!n.has("dim")) {
    const GraphTensor flat = x.reshape({product(x.dims())});
    return n.set_output(reshape_to(arg_extreme(flat, 0, is_max), n.out_dims()));
  }
  const std::vector<int> axes = axes_arg(n, "dim", x.rank());
  if (axes.empty()) return n.set_output(x.graph->constant(0.0, DType::I64));
  n.set_output(keep_dims(arg_extreme(x, axes[0], is_max), axes, n.bool_("keepdim", false)));
}

// any (all = not any not) over axes: i32 max of truthy(x).
void any_all(AtenNode& n, bool is_any) {
  const GraphTensor x = n.tensor("self");
  const std::vector<int> axes = axes_arg(n, "dim", x.rank());
  GraphTensor t = truthy(x);
  if (!is_any) t = bool_not(t);
  GraphTensor r =
      reduce_axes(t.cast(DType::I32), axes, [](const GraphTensor& v, int a) { return v.max(a); });
  r = r.cast(DType::Bool);
  if (!is_any) r = bool_not(r);
  n.set_output(keep_dims(r, axes, n.bool_("keepdim", false)));
}

}  // namespace

// sum / sum.dim_IntList (self, dim, keepdim, dtype): in the exported result dtype (ints and
// bools sum in i64).
void lower_sum(AtenNode& n) {
  const GraphTensor x = cast_to(n.tensor("self"), n.out_dtype());
  const std::vector<int> axes = axes_arg(n, "dim", x.rank());
  n.set_output(keep_dims(sum_axes(x, axes), axes, n.bool_("keepdim", false)));
}

// mean / mean.dim (self, dim, keepdim, dtype): float results only.
void lower_mean(AtenNode& n) {
  const DType dt = n.out_dtype();
  if (!is_float(dt)) n.fail(fmt::format("mean needs a float dtype, got {}", dtype_name(dt)));
  const GraphTensor x = to_f32_if_half(cast_to(n.tensor("self"), dt));
  const std::vector<int> axes = axes_arg(n, "dim", x.rank());
  n.set_output(keep_dims(cast_to(mean_axes(x, axes), dt), axes, n.bool_("keepdim", false)));
}

void lower_amax(AtenNode& n) {
  const GraphTensor x = n.tensor("self");
  const std::vector<int> axes = axes_arg(n, "dim", x.rank());
  auto f = [](const GraphTensor& t, int a) { return extreme(t, a, true); };
  n.set_output(keep_dims(reduce_axes(x, axes, f), axes, n.bool_("keepdim", false)));
}

void lower_amin(AtenNode& n) {
  const GraphTensor x = n.tensor("self");
  const std::vector<int> axes = axes_arg(n, "dim", x.rank());
  auto f = [](const GraphTensor& t, int a) { return extreme(t, a, false); };
  n.set_output(keep_dims(reduce_axes(x, axes, f), axes, n.bool_("keepdim", false)));
}

// max.dim / max.default (and min): with a dim, the values and the first index of the extreme.
void lower_max(AtenNode& n) {
  if (n.has("dim")) return values_indices(n, true);
  lower_amax(n);
}

void lower_min(AtenNode& n) {
  if (n.has("dim")) return values_indices(n, false);
  lower_amin(n);
}

void lower_argmax(AtenNode& n) { arg(n, true); }
void lower_argmin(AtenNode& n) { arg(n, false); }
void lower_any(AtenNode& n) { any_all(n, true); }
void lower_all(AtenNode& n) { any_all(n, false); }

// prod / prod.dim_int: a tree of products over halves (log2(n) multiplications deep); the axis
// must have a concrete size (there is no product primitive to reduce a symbolic one).
void lower_prod(AtenNode& n) {
  GraphTensor x = cast_to(n.tensor("self"), n.out_dtype());
  if (!n.has("dim")) x = x.reshape({product(x.dims())});
  const std::vector<int> axes = n.has("dim") ? axes_arg(n, "dim", x.rank()) : std::vector<int>{0};
  if (axes.empty()) return n.set_output(x);
  const int a = axes[0];
  const std::optional<int64_t> len = x.dims()[a].as_const();
  if (!len) n.fail(fmt::format("prod over a dim of symbolic size {}", x.dims()[a].to_string()));
  GraphTensor acc = x;
  std::vector<GraphTensor> odd;  // size-1 leftovers of odd lengths
  for (int64_t l = *len; l > 1; l /= 2) {
    if (l % 2) odd.push_back(acc.slice(a, l - 1, l));
    acc = acc.slice(a, 0, l / 2) * acc.slice(a, l / 2, l / 2 * 2);
  }
  for (const GraphTensor& o : odd) acc = acc * o;
  GraphTensor r = *len == 0 ? x.graph->constant(1.0, x.dtype) : drop_unit_dim(acc, a);
  if (*len == 0) {
    std::vector<Expr> d = x.dims();
    d.erase(d.begin() + a);
    r = r.expand_to(d);
  }
  n.set_output(keep_dims(r, axes, n.bool_("keepdim", false)));
}

// var / std (.dim: unbiased; .correction: correction, default 1): two-pass, sum((x - mean)^2) /
// (N - correction).
void lower_var_std(AtenNode& n, bool is_std) {
  const DType dt = n.out_dtype();
  const GraphTensor x = to_f32_if_half(cast_to(n.tensor("self"), dt));
  const std::vector<int> axes = axes_arg(n, "dim", x.rank());
  double corr = n.has("correction") ? n.scalar("correction").value : 1.0;
  if (n.has("unbiased")) corr = n.bool_("unbiased") ? 1.0 : 0.0;
  const GraphTensor mu = keep_dims(mean_axes(x, axes), axes, true);
  const GraphTensor d = x - mu.expand_to(x.dims());
  Expr count = 1;
  for (int a : axes) count = count * x.dims()[a];
  GraphTensor v = sum_axes(d * d, axes) * (sym_int_tensor(*x.graph, count, x.dtype) - corr).recip();
  if (is_std) v = v.sqrt();
  n.set_output(keep_dims(cast_to(v, dt), axes, n.bool_("keepdim", false)));
}

void lower_var(AtenNode& n) { lower_var_std(n, false); }
void lower_std(AtenNode& n) { lower_var_std(n, true); }

}  // namespace luminal::aten
