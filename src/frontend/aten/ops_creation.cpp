// Creation: full, zeros, ones, empty (zeros: luminal has no uninitialized memory, and a
// program that reads torch.empty's garbage has no defined result to match), arange, the *_like
// and new_* forms, scalar_tensor, tril/triu. Sizes may be SymInts; device, layout and pin_memory
// only say where torch would allocate (luminal runs the whole program on its own device).
#include <fmt/format.h>

#include "frontend/aten/operands.h"
#include "frontend/aten/shape_util.h"

namespace luminal::aten {

namespace {

// Layout codes of torch/_export/serde/schema.py: 7 is torch.strided.
void check_layout(AtenNode& n) {
  if (!n.has("layout")) return;
  const int64_t code = n.int_("layout");
  if (code != 7) n.fail(fmt::format("layout {} is not supported (only torch.strided)", code));
}

// A tensor of `shape` filled with operand `value` in the exported result dtype.
GraphTensor filled(AtenNode& n, const std::vector<Expr>& shape, const Operand& value) {
  check_layout(n);
  const GraphTensor c = as_tensor(value, n.out_dtype(), n.graph());
  return shape.empty() ? c : c.expand_to(shape);
}

Operand number(double v) { return Operand{std::nullopt, Scalar{v, false, false}, std::nullopt}; }

// The shape of a creation op: `size` when the op takes one, else self's (the *_like forms).
std::vector<Expr> shape_of(AtenNode& n) {
  if (n.has("size")) return n.sym_ints("size");
  return n.tensor("self").dims();
}

}  // namespace

void lower_full(AtenNode& n) { n.set_output(filled(n, shape_of(n), operand(n, "fill_value"))); }

void lower_zeros(AtenNode& n) { n.set_output(filled(n, shape_of(n), number(0.0))); }

void lower_ones(AtenNode& n) { n.set_output(filled(n, shape_of(n), number(1.0))); }

void lower_scalar_tensor(AtenNode& n) { n.set_output(filled(n, {}, operand(n, "s"))); }

// arange(end), arange(start, end), arange(start, end, step): start + i * step for i < the
// exported length, in i64 for integer results and f64 for float ones (torch's CPU accumulation
// types), then cast once. start and step may be SymInts.
void lower_arange(AtenNode& n) {
  check_layout(n);
  const DType dt = n.out_dtype();
  const std::vector<Expr> len = n.out_dims();
  if (len.size() != 1) n.fail("expects a 1-d result");
  const DType acc = is_float(dt) ? DType::F64 : DType::I64;
  if (dt == DType::Bool) n.fail("a bool arange is not supported");
  Graph& g = n.graph();
  const GraphTensor start =
      n.has("start") ? as_tensor(operand(n, "start"), acc, g) : g.constant(0.0, acc);
  const GraphTensor step =
      n.has("step") ? as_tensor(operand(n, "step"), acc, g) : g.constant(1.0, acc);
  const GraphTensor i = g.arange(len[0], DType::I64);
  const GraphTensor v = (acc == DType::I64 ? i : i.cast(acc)) * step + start;
  n.set_output(v.dtype == dt ? v : v.cast(dt));
}

// tril / triu (self, diagonal=0) over the last two dims: keep col - row <= k (tril) or >= k
// (triu), zeros elsewhere, selected with where() so an inf outside the band becomes 0, not NaN.
void tri(AtenNode& n, bool lower) {
  const GraphTensor x = n.tensor("self");
  if (x.rank() < 2) n.fail(fmt::format("needs at least 2 dims, got {}", shape_string(x.dims())));
  Graph& g = n.graph();
  const Expr rows = x.dims()[x.rank() - 2], cols = x.dims()[x.rank() - 1];
  const GraphTensor r = g.arange(rows, DType::I64).expand_dim(1, cols);
  const GraphTensor c = g.arange(cols, DType::I64).expand_dim(0, rows);
  const GraphTensor k = sym_int_tensor(g, n.sym_int("diagonal", Expr(0)), DType::I64);
  const GraphTensor off = c - r;
  const GraphTensor keep = lower ? off.le(k) : off.ge(k);
  n.set_output(where(keep, x, g.constant(0.0, x.dtype)));
}

void lower_tril(AtenNode& n) { tri(n, true); }
void lower_triu(AtenNode& n) { tri(n, false); }

}  // namespace luminal::aten
