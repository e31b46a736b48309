// Float helpers shared by the norm, softmax and attention families: PyTorch computes these ops of
// f16/bf16 tensors in f32 ("opmath") and rounds the result once; the lowerings do the same.
#pragma once

#include "luminal/tensor.h"

namespace luminal::aten {

/// The dtype PyTorch computes dt's reductions in: f32 for f16/bf16, dt otherwise.
DType opmath_dtype(DType dt);
/// t cast to opmath_dtype(t.dtype) (no node when it already is).
GraphTensor to_opmath(const GraphTensor& t);
/// t cast to dt (no node when it already is).
GraphTensor cast_to(const GraphTensor& t, DType dt);
/// The largest finite value of a float dtype (f16 65504, bf16 3.39e38, ...).
double finite_max(DType dt);
/// softmax over axis where rows with no finite entry (all -inf) give 0 instead of NaN, as
/// torch's _safe_softmax and SDPA's math path: exp(x - max(max(x), lowest)) / guarded sum.
GraphTensor safe_softmax(const GraphTensor& x, int axis);

}  // namespace luminal::aten
