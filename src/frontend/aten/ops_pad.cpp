// Constant padding: constant_pad_nd and pad(mode="constant"), as CUDA SDPA decompositions emit to
// align head dims. Negative pads crop.
#include <fmt/format.h>

#include "frontend/aten/shape_util.h"

namespace luminal::aten {

namespace {

// x padded per PyTorch's pad list (last dim first: [lo_last, hi_last, lo_prev, hi_prev, ...]) with
// `value` outside the input.
GraphTensor constant_pad(AtenNode& n, GraphTensor x, const std::vector<Expr>& pad, double value) {
  if (pad.size() % 2 != 0 || static_cast<int>(pad.size()) > 2 * x.rank())
    n.fail(fmt::format("pad must hold two entries per padded dim (at most {}), got {}",
                       2 * x.rank(), pad.size()));
  GraphTensor inside = n.graph().constant(1.0, DType::Bool).expand_to(x.dims());
  for (size_t i = 0; i < pad.size(); i += 2) {
    const int axis = x.rank() - 1 - static_cast<int>(i / 2);
    Expr lo = pad[i], hi = pad[i + 1];
    const auto clo = lo.as_const(), chi = hi.as_const();
    if (!clo || !chi) n.fail("symbolic pad amounts are not supported");
    // Crops first (a negative pad), then zero padding of what is left.
    const Expr size = x.dims()[axis];
    const Expr start = *clo < 0 ? Expr(-*clo) : Expr(0), end = *chi < 0 ? size + *chi : size;
    x = x.slice(axis, start, end), inside = inside.slice(axis, start, end);
    const Expr plo = *clo > 0 ? lo : Expr(0), phi = *chi > 0 ? hi : Expr(0);
    x = x.pad(axis, plo, phi), inside = inside.pad(axis, plo, phi);
  }
  if (value == 0.0) return x;
  return where(inside, x, n.graph().constant(value, x.dtype));
}

}  // namespace

// constant_pad_nd(self, pad, value=0).
void lower_constant_pad_nd(AtenNode& n) {
  n.set_output(constant_pad(n, n.tensor("self"), n.sym_ints("pad"), n.scalar("value", 0.0).value));
}

// pad(self, pad, mode="constant", value=None): the constant mode only.
void lower_pad(AtenNode& n) {
  if (n.has("mode") && n.str("mode") != "constant")
    n.fail(fmt::format("mode '{}' is not supported (only 'constant')", n.str("mode")));
  const std::optional<double> v = n.has("value") ? std::optional(n.scalar("value", 0.0).value) : std::nullopt;
  n.set_output(constant_pad(n, n.tensor("self"), n.sym_ints("pad"), v.value_or(0.0)));
}

}  // namespace luminal::aten
