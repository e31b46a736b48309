// Operand reading, symbolic ints as tensors, and torch's type promotion (c10 promoteTypes and
// at::native::result_type).
#include <stdexcept>

#include "frontend/aten/operands.h"

namespace luminal::aten {

Operand operand(const AtenNode& n, std::string_view name) {
  const Pt2Argument* a = nullptr;
  for (const Pt2NamedArgument& na : n.node().inputs)
    if (na.name == name) a = &na.arg;
  if (a && (a->kind == "tensor" || a->kind == "optional_tensor"))
    return Operand{n.tensor(name), {}, std::nullopt};
  if (std::optional<Expr> e = n.sym_value(name)) {
    const bool is_bool = a && (a->kind == "bool" || a->kind == "sym_bool");
    if (auto c = e->as_const())
      return Operand{std::nullopt, Scalar{double(*c), false, is_bool}, {}};
    return Operand{std::nullopt, Scalar{0.0, false, is_bool}, *e};
  }
  return Operand{std::nullopt, n.scalar(name), std::nullopt};
}

namespace {

// The value of e in i64. Sizes are non-negative, where C's / and % (Expr's) agree with Python's.
GraphTensor sym_i64(Graph& g, const Expr& e) {
  if (auto c = e.as_const()) return g.constant(static_cast<double>(*c), DType::I64);
  const std::vector<Expr> ch = e.children();
  auto kid = [&](size_t i) { return sym_i64(g, ch.at(i)); };
  switch (e.kind()) {
    case Expr::Kind::Sym:
      return g.constant(1.0, DType::I64).expand_dim(0, e).sum(0);
    case Expr::Kind::Add:
      return kid(0) + kid(1);
    case Expr::Kind::Sub:
      return kid(0) - kid(1);
    case Expr::Kind::Mul:
      return kid(0) * kid(1);
    case Expr::Kind::Div:  // truncating, through f64 (exact below 2^53)
      return (kid(0).cast(DType::F64) / kid(1).cast(DType::F64)).cast(DType::I64);
    case Expr::Kind::Mod:
      return kid(0) % kid(1);
    case Expr::Kind::Min:
      return kid(0).minimum(kid(1));
    case Expr::Kind::Max:
      return kid(0).maximum(kid(1));
    case Expr::Kind::Lt:
      return kid(0).lt(kid(1)).cast(DType::I64);
    case Expr::Kind::Const:
      break;
  }
  throw std::logic_error("[aten] unhandled size expression " + e.to_string());
}

// c10's combine_categories(higher, lower) for real dtypes (nullopt = no operand in that tier).
std::optional<DType> combine(std::optional<DType> higher, std::optional<DType> lower) {
  if (!higher) return lower;
  if (!lower || is_float(*higher)) return higher;
  if (*higher == DType::Bool || is_float(*lower)) return promote_types(*higher, *lower);
  return higher;
}

}  // namespace

GraphTensor sym_int_tensor(Graph& g, const Expr& e, DType dt) {
  if (auto c = e.as_const()) return g.constant(static_cast<double>(*c), dt);
  return sym_i64(g, e).cast(dt);
}

GraphTensor as_tensor(const Operand& o, DType dt, Graph& g) {
  if (o.tensor) return o.tensor->dtype == dt ? *o.tensor : o.tensor->cast(dt);
  if (o.sym) return sym_int_tensor(g, *o.sym, dt);
  return g.constant(o.scalar.value, dt);
}

GraphTensor as_tensor(const Operand& o, DType dt, const GraphTensor& like) {
  return as_tensor(o, dt, *like.graph);
}

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  const bool fa = is_float(a), fb = is_float(b);
  if (fa != fb) return fa ? a : b;  // int with float: the float
  if (fa) {
    if (a == DType::F64 || b == DType::F64) return DType::F64;
    return DType::F32;  // f16 with bf16, or either with f32
  }
  if (a == DType::I64 || b == DType::I64) return DType::I64;
  return DType::I32;  // u8 with i8 (torch: int16), or either with i32
}

DType result_type(const std::vector<Operand>& ops) {
  std::optional<DType> dim, zero, wrapped;
  auto update = [](std::optional<DType>& acc, DType dt) {
    acc = acc ? promote_types(*acc, dt) : dt;
  };
  for (const Operand& o : ops) {
    if (o.tensor) {
      update(o.tensor->rank() > 0 ? dim : zero, o.tensor->dtype);
    } else {
      update(wrapped, o.scalar.is_float ? DType::F32 : o.scalar.is_bool ? DType::Bool : DType::I64);
    }
  }
  std::optional<DType> r = combine(dim, combine(zero, wrapped));
  if (!r) throw std::logic_error("[aten] result_type of no operands");
  return *r;
}

}  // namespace luminal::aten
