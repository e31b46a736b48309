// where (exact select), IEEE comparisons with NaN and infinities, and integer minimum at the
// dtype's limits. Hand expectations: the IEEE / PyTorch results written out.
#include <limits>

#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

const double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

}  // namespace

LUMINAL_OP_CASE(WhereCase, infinities_in_branch_not_taken) {
  // c * x + !c * y would turn every inf / NaN of the branch not taken into NaN.
  CaseIO io;
  GraphTensor c = io.in(g.named_tensor("c", {6}, DType::Bool), {1, 0, 1, 0, 1, 0});
  GraphTensor x = io.in(g.named_tensor("x", {6}), {1, kInf, -kInf, kNaN, 5, -kInf});
  GraphTensor y = io.in(g.named_tensor("y", {6}), {-kInf, 2, kNaN, 4, kInf, -kInf});
  io.out(where(c, x, y), {1, 2, -kInf, 4, 5, -kInf});
  return io;
}

LUMINAL_OP_CASE(WhereCase, broadcast_mask_and_fill) {
  // An attention-style mask: [2, 1, 3] condition, [1, 2, 3] scores, a scalar -inf fill.
  CaseIO io;
  GraphTensor c = io.in(g.named_tensor("c", {2, 1, 3}, DType::Bool), {1, 1, 0, 0, 1, 1});
  GraphTensor x = io.in(g.named_tensor("x", {1, 2, 3}), {1, 2, 3, 4, 5, 6});
  GraphTensor fill = g.constant(-kInf);
  io.out(where(c, x, fill), {1, 2, -kInf, 4, 5, -kInf, -kInf, 2, 3, -kInf, 5, 6});
  return io;
}

LUMINAL_OP_CASE(WhereCase, i64_extremes) {
  CaseIO io;
  const double lo = -9223372036854775808.0;
  GraphTensor c = io.in(g.named_tensor("c", {3}, DType::Bool), {0, 1, 0});
  GraphTensor x = io.in(g.named_tensor("x", {3}, DType::I64), {1, lo, 3});
  GraphTensor y = io.in(g.named_tensor("y", {3}, DType::I64), {lo, 7, -9});
  io.out(where(c, x, y), {lo, lo, -9});
  return io;
}

LUMINAL_OP_CASE(WhereCase, bool_values_scalar_condition) {
  CaseIO io;
  GraphTensor c = io.in(g.named_tensor("c", {}, DType::Bool), {0});
  GraphTensor x = io.in(g.named_tensor("x", {2, 2}, DType::Bool), {1, 0, 1, 1});
  GraphTensor y = io.in(g.named_tensor("y", {2}, DType::Bool), {0, 1});
  io.out(where(c, x, y), {0, 1, 0, 1});
  return io;
}

LUMINAL_OP_CASE(WhereCase, dynamic_rows) {
  CaseIO io;
  const Expr s = Expr::sym("s");
  io.dyn = {{"s", 3}};
  GraphTensor c = io.in(g.named_tensor("c", {s, 2}, DType::Bool), {1, 0, 0, 1, 1, 1});
  GraphTensor x = io.in(g.named_tensor("x", {s, 2}, DType::F16), {1, 2, 3, 4, 5, 6});
  GraphTensor y = io.in(g.named_tensor("y", {2}, DType::F16), {-kInf, kNaN});
  io.out(where(c, x, y), {1, kNaN, -kInf, 4, 5, 6});
  return io;
}

LUMINAL_OP_CASE(CompareCase, nan_and_inf_f32) {
  // IEEE: every ordered comparison with NaN is false, ne is true.
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {7}), {kNaN, 1, kNaN, kInf, -kInf, kInf, 2});
  GraphTensor b = io.in(g.named_tensor("b", {7}), {1, kNaN, kNaN, kInf, kInf, -kInf, 2});
  io.out(a.lt(b), {0, 0, 0, 0, 1, 0, 0});
  io.out(a.le(b), {0, 0, 0, 1, 1, 0, 1});
  io.out(a.gt(b), {0, 0, 0, 0, 0, 1, 0});
  io.out(a.ge(b), {0, 0, 0, 1, 0, 1, 1});
  io.out(a.eq(b), {0, 0, 0, 1, 0, 0, 1});
  io.out(a.ne(b), {1, 1, 1, 0, 1, 1, 0});
  return io;
}

LUMINAL_OP_CASE(CompareCase, nan_bf16) {
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {3}, DType::BF16), {kNaN, 0.5, -0.0});
  GraphTensor b = io.in(g.named_tensor("b", {3}, DType::BF16), {kNaN, 0.5, 0.0});
  io.out(a.eq(b), {0, 1, 1});
  io.out(a.le(b), {0, 1, 1});
  return io;
}

LUMINAL_OP_CASE(MinimumCase, i32_limits) {
  // -x overflows at INT32_MIN; the minimum must not.
  CaseIO io;
  const double lo = -2147483648.0, hi = 2147483647.0;
  GraphTensor a = io.in(g.named_tensor("a", {4}, DType::I32), {lo, 0, hi, lo});
  GraphTensor b = io.in(g.named_tensor("b", {4}, DType::I32), {0, lo, lo, hi});
  io.out(a.minimum(b), {lo, lo, lo, lo});
  return io;
}

LUMINAL_OP_CASE(MinimumCase, u8) {
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {4}, DType::U8), {0, 255, 7, 200});
  GraphTensor b = io.in(g.named_tensor("b", {4}, DType::U8), {255, 0, 9, 100});
  io.out(a.minimum(b), {0, 0, 7, 100});
  return io;
}

}  // namespace luminal::ops_test
