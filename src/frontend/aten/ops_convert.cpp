// Conversions and inference no-ops: _to_copy, to.*, type_as (a cast to the exported result
// dtype; device moves are no-ops, as the whole program runs on luminal's device), the metadata
// and range assertions torch.export inserts, dropout in eval mode, alias_copy.
#include <fmt/format.h>

#include "frontend/aten/node.h"

namespace luminal::aten {

namespace {

void check_strided(AtenNode& n) {
  // Layout codes of torch/_export/serde/schema.py: 7 is torch.strided.
  if (n.has("layout") && n.int_("layout") != 7)
    n.fail(fmt::format("layout {} is not supported (only torch.strided)", n.int_("layout")));
}

// A tensor argument read as Tensor (self) or, for the assertion ops, as "a".
GraphTensor subject(AtenNode& n) { return n.tensor(n.has("self") ? "self" : "a"); }

}  // namespace

// _to_copy, to.dtype, to.device, to.dtype_layout, to.other, type_as: float -> int truncates toward
// zero and anything -> bool tests != 0, as in torch.
void lower_to(AtenNode& n) {
  check_strided(n);
  const GraphTensor x = n.tensor("self");
  const DType dt = n.out_dtype();
  n.set_output(x.dtype == dt ? x : x.cast(dt));
}

// _assert_tensor_metadata(a, size, stride, dtype, device, layout): the dtype and sizes the trace
// saw; a mismatch here means the translation diverged from the program.
void lower_assert_tensor_metadata(AtenNode& n) {
  const GraphTensor a = subject(n);
  check_strided(n);
  if (auto dt = n.dtype("dtype"); dt && *dt != a.dtype)
    n.fail(
        fmt::format("tensor is {}, the program asserts {}", dtype_name(a.dtype), dtype_name(*dt)));
  if (!n.has("size")) return;
  const std::vector<Expr> want = n.sym_ints("size");
  bool ok = want.size() == a.dims().size();
  for (size_t i = 0; ok && i < want.size(); ++i) {
    auto w = want[i].as_const(), h = a.dims()[i].as_const();
    ok = !(w && h) || *w == *h;  // symbolic sizes are checked by the shape check of each node
  }
  if (!ok)
    n.fail(fmt::format("tensor has shape {}, the program asserts {}", shape_string(a.dims()),
                       shape_string(want)));
}

// _assert_scalar(self, assert_msg): a concrete false fails now; a symbolic condition on sizes
// cannot be decided before the sizes are known and is not checked (torch.export checks the
// input ranges it derives from it).
void lower_assert_scalar(AtenNode& n) {
  const std::optional<Expr> v = n.sym_value("self");
  if (v && v->as_const() == 0)
    n.fail(fmt::format("assertion fails: {}", n.str("assert_msg", std::string("(no message)"))));
}

// sym_constrain_range(_for_size)(size, min, max): checked when the size is concrete.
void lower_sym_constrain_range(AtenNode& n) {
  const std::optional<Expr> v = n.sym_value("size");
  const std::optional<int64_t> c = v ? v->as_const() : std::nullopt;
  if (!c) return;
  const std::optional<int64_t> lo = n.opt_int("min"), hi = n.opt_int("max");
  if ((lo && *c < *lo) || (hi && *c > *hi))
    n.fail(fmt::format("value {} is outside [{}, {}]", *c, lo ? std::to_string(*lo) : "-inf",
                       hi ? std::to_string(*hi) : "inf"));
}

// dropout(input, p, train) is the identity for inference; training-mode dropout (random) is
// refused.
void lower_dropout(AtenNode& n) {
  const double p = n.scalar("p").value;
  const bool train = n.has("train") && n.bool_("train");
  if (train && p != 0.0)
    n.fail(
        fmt::format("train=True with p={} is random; luminal runs inference (eval mode) only", p));
  const GraphTensor x = n.tensor("input");
  n.set_output(x, 0);
  if (n.num_outputs() > 1) {  // native_dropout's keep-mask: all kept
    n.set_output(x.graph->constant(1.0, DType::Bool).expand_to(x.dims()), 1);
  }
}

}  // namespace luminal::aten
