// Activations on the GraphTensor API's decompositions (the lowering pattern-matches relu's exact
// form for cuBLASLt epilogues). Piecewise ones are built from maximum/minimum, which are exact
// for infinities, rather than a select, whose unselected branch can turn inf into NaN (0 * inf).
#include <fmt/format.h>

#include "frontend/aten/node.h"

namespace luminal::aten {

namespace {

// `self` in the exported (float) result dtype: torch promotes integer inputs of tanh and erf.
GraphTensor float_input(AtenNode& n) {
  GraphTensor x = n.tensor("self");
  const DType dt = n.out_dtype();
  if (!is_float(dt))
    n.fail(fmt::format("expects a float result, got {} (input {})", dtype_name(dt),
                       dtype_name(x.dtype)));
  return x.dtype == dt ? x : x.cast(dt);
}

// `self` for ops PyTorch also runs on integers (hardtanh, relu6): any dtype but Bool.
GraphTensor numeric_input(AtenNode& n) {
  GraphTensor x = n.tensor("self");
  if (x.dtype == DType::Bool) n.fail("expects a numeric tensor, got bool");
  return x;
}

GraphTensor clamp_between(const GraphTensor& x, double lo, double hi) {
  Graph& g = *x.graph;
  return x.maximum(g.constant(lo, x.dtype)).minimum(g.constant(hi, x.dtype));
}

// scale * (max(x, 0) + alpha * (exp(min(x, 0) * input_scale) - 1)): elu, selu and celu.
GraphTensor elu(const GraphTensor& x, double alpha, double scale, double input_scale) {
  GraphTensor zero = x.graph->constant(0.0, x.dtype);
  GraphTensor y = x.maximum(zero) + ((x.minimum(zero) * input_scale).exp() - 1.0) * alpha;
  return scale == 1.0 ? y : y * scale;
}

}  // namespace

// elu(self, alpha=1, scale=1, input_scale=1).
void lower_elu(AtenNode& n) {
  n.set_output(elu(float_input(n), n.scalar("alpha", 1.0).value, n.scalar("scale", 1.0).value,
                   n.scalar("input_scale", 1.0).value));
}

// selu(self) = elu with PyTorch's fixed alpha and scale.
void lower_selu(AtenNode& n) {
  n.set_output(elu(float_input(n), 1.6732632423543772848170429916717,
                   1.0507009873554804934193349852946, 1.0));
}

// celu(self, alpha=1) = max(x, 0) + min(0, alpha * (exp(x / alpha) - 1)).
void lower_celu(AtenNode& n) {
  const double alpha = n.scalar("alpha", 1.0).value;
  if (alpha == 0.0) n.fail("alpha=0 is not supported (ZeroDivisionError in PyTorch)");
  n.set_output(elu(float_input(n), alpha, 1.0, 1.0 / alpha));
}

void lower_relu(AtenNode& n) { n.set_output(n.tensor("self").relu()); }

void lower_sigmoid(AtenNode& n) { n.set_output(n.tensor("self").sigmoid()); }

void lower_silu(AtenNode& n) { n.set_output(float_input(n).silu()); }

void lower_tanh(AtenNode& n) { n.set_output(float_input(n).tanh()); }

// gelu(self, approximate="none"): "none" is the exact erf form, "tanh" the tanh approximation.
void lower_gelu(AtenNode& n) {
  const std::string approximate = n.str("approximate", "none");
  GraphTensor x = float_input(n);
  if (approximate == "none") return n.set_output(x.gelu_erf());
  if (approximate == "tanh") return n.set_output(x.gelu());
  n.fail(fmt::format("approximate='{}' is not 'none' or 'tanh'", approximate));
}

// erf(self): GraphTensor::erf, |error| <= 1.2e-7 in f32.
void lower_erf(AtenNode& n) { n.set_output(float_input(n).erf()); }

// erfc(self): relative-accurate in the tail.
void lower_erfc(AtenNode& n) { n.set_output(float_input(n).erfc()); }

// hardtanh(self, min_val=-1, max_val=1) = min(max(x, min_val), max_val).
void lower_hardtanh(AtenNode& n) {
  const double lo = n.scalar("min_val", -1.0).value, hi = n.scalar("max_val", 1.0).value;
  if (lo > hi) n.fail(fmt::format("min_val {} is above max_val {}", lo, hi));
  n.set_output(clamp_between(numeric_input(n), lo, hi));
}

// relu6(self) = hardtanh(x, 0, 6).
void lower_relu6(AtenNode& n) { n.set_output(clamp_between(numeric_input(n), 0.0, 6.0)); }

// leaky_relu(self, negative_slope=0.01) = max(x, 0) + slope * min(x, 0).
void lower_leaky_relu(AtenNode& n) {
  const double slope = n.scalar("negative_slope", 0.01).value;
  GraphTensor x = float_input(n);
  GraphTensor zero = x.graph->constant(0.0, x.dtype);
  n.set_output(x.maximum(zero) + x.minimum(zero) * slope);
}

// hardsigmoid(self) = relu6(x + 3) / 6.
void lower_hardsigmoid(AtenNode& n) {
  n.set_output(clamp_between(float_input(n) + 3.0, 0.0, 6.0) * (1.0 / 6.0));
}

// hardswish(self) = x * relu6(x + 3) / 6.
void lower_hardswish(AtenNode& n) {
  GraphTensor x = float_input(n);
  n.set_output(x * clamp_between(x + 3.0, 0.0, 6.0) * (1.0 / 6.0));
}

}  // namespace luminal::aten
