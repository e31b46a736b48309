// Symbolic ints: sym_numel / sym_stride (sym_size is in ops_shape.cpp) and the Python operators
// torch.export records on SymInts (_operator.add, ..., torch.sym_max) and SymBools (_operator.eq,
// ..., torch.sym_not). Results are Exprs over the program's size symbols; a SymBool is an Expr
// worth 0 or 1.
//
// Division and modulo: concrete operands follow Python (floor division, the sign of the divisor);
// symbolic ones use Expr's C semantics, which agree with Python on the non-negative values sizes
// take (as does the parsing of torch's FloorDiv / Mod in the exported shapes).
#include <fmt/format.h>

#include "frontend/aten/node.h"
#include "frontend/aten/shape_util.h"

namespace luminal::aten {

namespace {

Expr arg(AtenNode& n, const char* name) {
  std::optional<Expr> v = n.sym_value(name);
  if (!v)
    n.fail(fmt::format("argument '{}' must be an int or SymInt (symbolic floats are not supported)",
                       name));
  return *v;
}

template <class F>
void sym_binary(AtenNode& n, F f) {
  n.set_sym_int(f(arg(n, "a"), arg(n, "b")));
}

template <class F>
void sym_compare(AtenNode& n, F f) {
  n.set_sym_bool(f(arg(n, "a"), arg(n, "b")));
}

int64_t py_floordiv(int64_t a, int64_t b) {
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

Expr one_minus(const Expr& e) { return Expr(1) - e; }

}  // namespace

void lower_sym_numel(AtenNode& n) { n.set_sym_int(product(n.tensor("self").dims())); }

// torch's stride of the tensor as exported (luminal's own views may differ).
void lower_sym_stride(AtenNode& n) {
  const Pt2TensorMeta& m = n.arg_meta("self");
  const int d = norm_dim(n, n.int_("dim"), static_cast<int>(m.strides.size()));
  n.set_sym_int(sym_int_expr(m.strides[d]));
}

void lower_sym_add(AtenNode& n) {
  sym_binary(n, [](const Expr& a, const Expr& b) { return a + b; });
}
void lower_sym_sub(AtenNode& n) {
  sym_binary(n, [](const Expr& a, const Expr& b) { return a - b; });
}
void lower_sym_mul(AtenNode& n) {
  sym_binary(n, [](const Expr& a, const Expr& b) { return a * b; });
}
void lower_sym_neg(AtenNode& n) { n.set_sym_int(Expr(0) - arg(n, "a")); }

void lower_sym_floordiv(AtenNode& n) {
  const Expr a = arg(n, "a"), b = arg(n, "b");
  if (b.as_const() == 0) n.fail("integer division by zero");
  if (auto ca = a.as_const(), cb = b.as_const(); ca && cb)
    return n.set_sym_int(py_floordiv(*ca, *cb));
  n.set_sym_int(a / b);
}

void lower_sym_mod(AtenNode& n) {
  const Expr a = arg(n, "a"), b = arg(n, "b");
  if (b.as_const() == 0) n.fail("integer modulo by zero");
  if (auto ca = a.as_const(), cb = b.as_const(); ca && cb)
    return n.set_sym_int(*ca - *cb * py_floordiv(*ca, *cb));
  n.set_sym_int(a % b);
}

void lower_sym_max(AtenNode& n) {
  sym_binary(n, [](const Expr& a, const Expr& b) { return max(a, b); });
}
void lower_sym_min(AtenNode& n) {
  sym_binary(n, [](const Expr& a, const Expr& b) { return min(a, b); });
}

void lower_sym_eq(AtenNode& n) {
  sym_compare(
      n, [](const Expr& a, const Expr& b) { return one_minus(lt(a, b)) * one_minus(lt(b, a)); });
}
void lower_sym_ne(AtenNode& n) {
  sym_compare(n, [](const Expr& a, const Expr& b) {
    return one_minus(one_minus(lt(a, b)) * one_minus(lt(b, a)));
  });
}
void lower_sym_lt(AtenNode& n) {
  sym_compare(n, [](const Expr& a, const Expr& b) { return lt(a, b); });
}
void lower_sym_le(AtenNode& n) {
  sym_compare(n, [](const Expr& a, const Expr& b) { return one_minus(lt(b, a)); });
}
void lower_sym_gt(AtenNode& n) {
  sym_compare(n, [](const Expr& a, const Expr& b) { return lt(b, a); });
}
void lower_sym_ge(AtenNode& n) {
  sym_compare(n, [](const Expr& a, const Expr& b) { return one_minus(lt(a, b)); });
}

// SymBool logic (values 0 / 1).
void lower_sym_and(AtenNode& n) {
  sym_compare(n, [](const Expr& a, const Expr& b) { return a * b; });
}
void lower_sym_or(AtenNode& n) {
  sym_compare(n, [](const Expr& a, const Expr& b) { return max(a, b); });
}
void lower_sym_not(AtenNode& n) { n.set_sym_bool(one_minus(arg(n, "a"))); }

}  // namespace luminal::aten
