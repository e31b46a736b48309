// Matrix products: linear, addmm, mm, bmm, matmul. Each builds GraphTensor::matmul's canonical
// form (and x @ W^T + b for linear, as nn::Linear does), so the lowering finds cuBLASLt matmuls
// with fused bias epilogues and rules see the same pattern whichever frontend built the graph.
#include <fmt/format.h>

#include "frontend/aten/node.h"

namespace luminal::aten {

// linear(input, weight, bias=None) = input @ weight^T + bias, weight (out, in).
void lower_linear(AtenNode& n) {
  const GraphTensor x = n.tensor("input"), w = n.tensor("weight");
  if (w.rank() != 2) n.fail(fmt::format("weight must be 2-D, got {}", shape_string(w.dims())));
  GraphTensor y = x.matmul(w.transpose(0, 1));
  if (auto b = n.opt_tensor("bias")) y = y + *b;
  n.set_output(y);
}

// addmm(self, mat1, mat2, beta=1, alpha=1) = beta * self + alpha * (mat1 @ mat2).
void lower_addmm(AtenNode& n) {
  const Scalar beta = n.scalar("beta", 1.0), alpha = n.scalar("alpha", 1.0);
  GraphTensor y = n.tensor("mat1").matmul(n.tensor("mat2"));
  if (alpha.value != 1.0) y = y * alpha.value;
  if (beta.value != 0.0) {
    GraphTensor c = n.tensor("self");
    if (beta.value != 1.0) c = c * beta.value;
    y = y + c;
  }
  n.set_output(y);
}

// mm(self, mat2): 2-D @ 2-D.
void lower_mm(AtenNode& n) {
  const GraphTensor a = n.tensor("self"), b = n.tensor("mat2");
  if (a.rank() != 2 || b.rank() != 2)
    n.fail(fmt::format("expects 2-D operands, got {} and {}", shape_string(a.dims()),
                       shape_string(b.dims())));
  n.set_output(a.matmul(b));
}

// bmm(self, mat2): [B, M, K] @ [B, K, N].
void lower_bmm(AtenNode& n) {
  const GraphTensor a = n.tensor("self"), b = n.tensor("mat2");
  if (a.rank() != 3 || b.rank() != 3)
    n.fail(fmt::format("expects 3-D operands, got {} and {}", shape_string(a.dims()),
                       shape_string(b.dims())));
  n.set_output(a.matmul(b));
}

// matmul(self, other): numpy semantics (1-D to 4-D here).
void lower_matmul(AtenNode& n) { n.set_output(n.tensor("self").matmul(n.tensor("other"))); }

}  // namespace luminal::aten
