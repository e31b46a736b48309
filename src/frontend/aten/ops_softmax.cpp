// Softmax family: softmax.int, _softmax, _safe_softmax, log_softmax.int, _log_softmax, on
// GraphTensor::softmax / log_softmax (max-subtracted) in opmath (f16/bf16 computed in f32 and
// rounded once, as PyTorch does). half_to_float needs nothing special: the result is cast to the
// exported dtype, which is f32 when it was set.
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "frontend/aten/node.h"
#include "frontend/aten/opmath.h"
#include "frontend/aten/shape_util.h"

namespace luminal::aten {

DType opmath_dtype(DType dt) { return dt == DType::F16 || dt == DType::BF16 ? DType::F32 : dt; }

GraphTensor cast_to(const GraphTensor& t, DType dt) { return t.dtype == dt ? t : t.cast(dt); }

GraphTensor to_opmath(const GraphTensor& t) { return cast_to(t, opmath_dtype(t.dtype)); }

double finite_max(DType dt) {
  switch (dt) {
    case DType::F16:
      return 65504.0;
    case DType::BF16:
      return 3.3895313892515355e38;
    case DType::F32:
      return std::numeric_limits<float>::max();
    default:
      return std::numeric_limits<double>::max();
  }
}

// A row whose entries are all -inf has max -inf; clamping the max to the lowest finite value makes
// every exp(-inf - lowest) = 0, so the sum is 0 and the guard (+1 where the sum is below 1/2)
// yields 0 / 1. Any row with a finite entry has sum >= 1 (its max contributes exp(0)).
GraphTensor safe_softmax(const GraphTensor& x, int axis) {
  const int a = axis < 0 ? axis + x.rank() : axis;
  const Expr& n = x.dims().at(a);
  GraphTensor m = x.max(a).maximum(x.graph->constant(-finite_max(x.dtype), x.dtype));
  GraphTensor e = (x - m.expand_dim(a, n)).exp();
  GraphTensor s = e.sum(a);
  GraphTensor guarded = s + s.lt(0.5).cast(x.dtype);
  return e * guarded.recip().expand_dim(a, n);
}

namespace {

enum class Kind { Softmax, LogSoftmax, SafeSoftmax };

// self in the dtype the op computes in: `dtype` (softmax.int's argument) when given, then opmath.
void lower(AtenNode& n, Kind kind) {
  GraphTensor x = n.tensor("self");
  if (auto dt = n.dtype("dtype")) x = cast_to(x, *dt);
  if (!is_float(x.dtype))
    n.fail(fmt::format("expects a float tensor, got {} (pass dtype= to convert)",
                       dtype_name(x.dtype)));
  if (n.has("half_to_float") && n.bool_("half_to_float") && x.dtype != DType::F16 &&
      x.dtype != DType::BF16)
    n.fail(fmt::format("half_to_float=True needs an f16/bf16 input, got {}", dtype_name(x.dtype)));
  const int dim = norm_dim(n, n.int_("dim"), std::max(x.rank(), 1));
  GraphTensor y = to_opmath(x);
  if (y.rank() == 0) y = y.expand_dim(0, 1);  // torch allows dim 0 / -1 on a 0-d tensor
  switch (kind) {
    case Kind::Softmax:
      y = y.softmax(dim);
      break;
    case Kind::LogSoftmax:
      y = y.log_softmax(dim);
      break;
    case Kind::SafeSoftmax:
      y = safe_softmax(y, dim);
      break;
  }
  if (x.rank() == 0) y = drop_unit_dim(y, 0);
  n.set_output(cast_to(y, n.out_dtype()));
}

}  // namespace

void lower_softmax(AtenNode& n) { lower(n, Kind::Softmax); }

void lower_log_softmax(AtenNode& n) { lower(n, Kind::LogSoftmax); }

void lower_safe_softmax(AtenNode& n) { lower(n, Kind::SafeSoftmax); }

}  // namespace luminal::aten
