// Operands of elementwise ATen ops: a tensor or a Python scalar, promoted to one dtype.
#pragma once

#include "frontend/aten/node.h"

namespace luminal::aten {

/// An argument that may be a tensor or a scalar (add.Tensor's `other` can be either).
struct Operand {
  std::optional<GraphTensor> tensor;
  Scalar scalar;
};

/// Reads argument `name` as a tensor or a scalar.
Operand operand(const AtenNode& n, std::string_view name);
/// The operand as a tensor of dtype dt: a tensor is cast when it differs, a scalar becomes a
/// Constant broadcast like `like`.
GraphTensor as_tensor(const Operand& o, DType dt, const GraphTensor& like);
/// A tensor of dtype dt holding the value of a symbolic int (a sum of e ones: one small reduction),
/// for ops that mix tensors with sizes, e.g. x * x.shape[0].
GraphTensor sym_int_tensor(Graph& g, const Expr& e, DType dt);

}  // namespace luminal::aten
