// Normalizations over the trailing `normalized_shape` dims: native_layer_norm (out, mean, rstd),
// layer_norm, rms_norm, _fused_rms_norm (out, rstd). The trailing dims are merged into one (a view
// for contiguous inputs), normalized in opmath (f16/bf16 in f32, as PyTorch), and split back.
#include <limits>

#include <fmt/format.h>

#include "frontend/aten/node.h"
#include "frontend/aten/opmath.h"

namespace luminal::aten {

namespace {

// The input with its trailing k = len(normalized_shape) dims merged into one, in opmath.
struct Flat {
  GraphTensor x;             // [outer..., prod(normalized_shape)], opmath dtype
  std::vector<Expr> normed;  // the normalized dims
  int k = 0;
};

Flat flatten_normalized(AtenNode& n) {
  const GraphTensor in = n.tensor("input");
  if (!is_float(in.dtype))
    n.fail(fmt::format("expects a float input, got {}", dtype_name(in.dtype)));
  const std::vector<Expr> shape = n.sym_ints("normalized_shape");
  const int k = static_cast<int>(shape.size()), r = in.rank();
  if (k == 0 || k > r)
    n.fail(
        fmt::format("normalized_shape has {} dims, the input is {}", k, shape_string(in.dims())));
  Flat f{to_opmath(in), {in.dims().end() - k, in.dims().end()}, k};
  for (int i = 0; i < k; ++i)
    if (!f.normed[i].same(shape[i]))
      n.fail(fmt::format("normalized_shape {} does not match the trailing dims of {}",
                         shape_string(shape), shape_string(in.dims())));
  for (int i = 1; i < k; ++i) f.x = f.x.merge_dims(r - k);
  return f;
}

// An affine parameter of shape normalized_shape, flattened like the input, in dtype dt.
GraphTensor flat_param(AtenNode& n, const GraphTensor& p, const Flat& f, DType dt) {
  if (p.rank() != f.k)
    n.fail(fmt::format("weight/bias {} does not match normalized_shape {}", shape_string(p.dims()),
                       shape_string(f.normed)));
  GraphTensor q = cast_to(p, dt);
  for (int i = 1; i < f.k; ++i) q = q.merge_dims(0);
  return q;
}

// y [outer..., N] back to [outer..., normalized dims...].
GraphTensor unflatten(GraphTensor y, const Flat& f) {
  const int last = y.rank() - 1;
  for (int i = 0; i + 1 < f.k; ++i) {
    Expr inner = f.normed[f.k - 1];
    for (int j = f.k - 2; j > i; --j) inner = inner * f.normed[j];
    y = y.split_dims(last + i, inner);
  }
  return y;
}

// A per-row statistic [outer...] as [outer..., 1 x k] (mean, rstd outputs).
GraphTensor keep_dims(GraphTensor s, int k) {
  for (int i = 0; i < k; ++i) s = s.expand_dim(s.rank(), 1);
  return s;
}

void layer_norm(AtenNode& n, bool native) {
  const Flat f = flatten_normalized(n);
  const int a = f.x.rank() - 1;
  const Expr& len = f.x.dims()[a];
  const double eps = n.scalar("eps", 1e-5).value;
  GraphTensor mean = f.x.mean(a);
  GraphTensor d = f.x - mean.expand_dim(a, len);
  GraphTensor rstd = ((d * d).mean(a) + eps).sqrt().recip();
  GraphTensor y = d * rstd.expand_dim(a, len);
  if (auto w = n.opt_tensor("weight")) y = y * flat_param(n, *w, f, y.dtype);
  if (auto b = n.opt_tensor("bias")) y = y + flat_param(n, *b, f, y.dtype);
  n.set_output(cast_to(unflatten(y, f), n.out_dtype(0)), 0);
  if (!native) return;
  if (n.output_is_tensor(1)) n.set_output(cast_to(keep_dims(mean, f.k), n.out_dtype(1)), 1);
  if (n.output_is_tensor(2)) n.set_output(cast_to(keep_dims(rstd, f.k), n.out_dtype(2)), 2);
}

// x * rsqrt(mean(x^2) + eps) [* weight], in opmath, rounded to the input dtype; eps None is the
// machine epsilon of the opmath dtype (torch's _fused_rms_norm).
void rms_norm(AtenNode& n, bool fused) {
  const Flat f = flatten_normalized(n);
  const int a = f.x.rank() - 1;
  const double eps = !n.has("eps")
                         ? (f.x.dtype == DType::F64 ? std::numeric_limits<double>::epsilon()
                                                    : std::numeric_limits<float>::epsilon())
                         : n.scalar("eps").value;
  GraphTensor rstd = ((f.x * f.x).mean(a) + eps).sqrt().recip();
  GraphTensor y = f.x * rstd.expand_dim(a, f.x.dims()[a]);
  if (auto w = n.opt_tensor("weight")) y = y * flat_param(n, *w, f, y.dtype);
  n.set_output(cast_to(unflatten(y, f), n.out_dtype(0)), 0);
  if (fused && n.output_is_tensor(1))
    n.set_output(cast_to(keep_dims(rstd, f.k), n.out_dtype(1)), 1);
}

}  // namespace

void lower_layer_norm(AtenNode& n) { layer_norm(n, false); }

void lower_native_layer_norm(AtenNode& n) { layer_norm(n, true); }

void lower_rms_norm(AtenNode& n) { rms_norm(n, false); }

void lower_fused_rms_norm(AtenNode& n) { rms_norm(n, true); }

}  // namespace luminal::aten
