// Arithmetic: add, sub, rsub, mul, div with tensors or scalars. The result dtype is the one
// torch.export recorded (its type promotion), and every operand is cast to it explicitly, so
// int + float, int / int (true division) and bool * float behave as in PyTorch.
#include <fmt/format.h>

#include "frontend/aten/operands.h"

namespace luminal::aten {

namespace {

// self OP alpha * other, in the exported result dtype.
template <class F>
void binary(AtenNode& n, F op, bool reversed = false) {
  const DType dt = n.out_dtype();
  const Operand a = operand(n, "self"), b = operand(n, "other");
  GraphTensor x = as_tensor(a, dt, n.graph()), y = as_tensor(b, dt, n.graph());
  if (n.has("alpha")) {
    const double alpha = n.scalar("alpha").value;
    if (alpha != 1.0) y = y * alpha;
  }
  n.set_output(reversed ? op(y, x) : op(x, y));
}

}  // namespace

void lower_add(AtenNode& n) {
  binary(n, [](const GraphTensor& x, const GraphTensor& y) { return x + y; });
}

void lower_sub(AtenNode& n) {
  binary(n, [](const GraphTensor& x, const GraphTensor& y) { return x - y; });
}

// rsub(self, other, alpha) = other - alpha * self.
void lower_rsub(AtenNode& n) {
  const DType dt = n.out_dtype();
  const Operand a = operand(n, "self"), b = operand(n, "other");
  GraphTensor x = as_tensor(a, dt, n.graph());
  if (n.has("alpha") && n.scalar("alpha").value != 1.0) x = x * n.scalar("alpha").value;
  n.set_output(as_tensor(b, dt, n.graph()) - x);
}

void lower_mul(AtenNode& n) {
  binary(n, [](const GraphTensor& x, const GraphTensor& y) { return x * y; });
}

// div(self, other, rounding_mode=None): true division in the (float) result dtype.
void lower_div(AtenNode& n) {
  if (n.has("rounding_mode"))
    n.fail(fmt::format("rounding_mode='{}' is not supported (true division is)",
                       n.str("rounding_mode")));
  if (!is_float(n.out_dtype())) n.fail("integer division is not supported");
  binary(n, [](const GraphTensor& x, const GraphTensor& y) { return x / y; });
}

}  // namespace luminal::aten
