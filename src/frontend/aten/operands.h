// Operands of elementwise ATen ops: a tensor, a Python scalar or a SymInt, and torch's type
// promotion over them.
#pragma once

#include <vector>

#include "frontend/aten/node.h"

namespace luminal::aten {

/// An argument that may be a tensor, a scalar or a symbolic int (add.Tensor's `other` can be any).
struct Operand {
  std::optional<GraphTensor> tensor;
  /// The value of a concrete scalar; its is_float / is_bool flags also type a symbolic one.
  Scalar scalar;
  /// A SymInt / SymBool known only at run time (x * x.shape[0] with a dynamic dim).
  std::optional<Expr> sym;
};

/// Reads argument `name` as a tensor, a scalar or a symbolic int.
Operand operand(const AtenNode& n, std::string_view name);
/// The operand as a tensor of dtype dt: a tensor is cast when it differs, a scalar becomes a
/// Constant (broadcast on use), a symbolic int is computed from the sizes (sym_int_tensor).
GraphTensor as_tensor(const Operand& o, DType dt, const GraphTensor& like);
/// The same for operands of ops with no tensor argument (full, arange).
GraphTensor as_tensor(const Operand& o, DType dt, Graph& g);
/// A tensor of dtype dt (shape []) holding the value of a symbolic int, for ops that mix tensors
/// with sizes, e.g. x * x.shape[0]: each symbol is the sum of that many ones (one tiny reduction)
/// and the expression is evaluated on those in i64.
GraphTensor sym_int_tensor(Graph& g, const Expr& e, DType dt);

/// torch.promote_types for luminal's dtypes (u8 with i8, int16 in torch, gives i32: wide enough
/// for both, which is all comparisons need).
DType promote_types(DType a, DType b);
/// torch.result_type over operands: dimensioned tensors outrank zero-dim tensors, which outrank
/// Python scalars, unless a lower tier has a higher category (bool < int < float); a float scalar
/// then means float32 (torch's default dtype) and an int scalar int64.
DType result_type(const std::vector<Operand>& ops);

// ---- Bool logic (ops_compare.cpp): through i32 arithmetic, exact on every backend ----
/// a and b (Bool tensors, broadcast).
GraphTensor bool_and(const GraphTensor& a, const GraphTensor& b);
/// a or b.
GraphTensor bool_or(const GraphTensor& a, const GraphTensor& b);
/// a xor b.
GraphTensor bool_xor(const GraphTensor& a, const GraphTensor& b);
/// not a.
GraphTensor bool_not(const GraphTensor& a);
/// x != 0 as Bool (NaN counts as true, as bool(nan) in torch).
GraphTensor truthy(const GraphTensor& x);

}  // namespace luminal::aten
