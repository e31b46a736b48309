// GraphTensor elementwise API: arithmetic (tensor and scalar forms, numpy broadcasting),
// comparisons, maximum/minimum. Hand-computed expectations.
#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

using BinaryFn = GraphTensor (*)(const GraphTensor&, const GraphTensor&);

/// a, b of shape [n] and dtype dt -> f(a, b) -> expectation.
CaseIO api_binary(Graph& g, DType dt, const std::vector<double>& a, const std::vector<double>& b,
                  BinaryFn f, std::vector<double> want) {
  CaseIO io;
  Expr n = static_cast<int64_t>(a.size());
  GraphTensor ta = io.in(g.named_tensor("a", {n}, dt), a);
  GraphTensor tb = io.in(g.named_tensor("b", {n}, dt), b);
  io.out(f(ta, tb), std::move(want));
  return io;
}

/// x of shape [n] -> f(x) -> expectation.
template <class F>
CaseIO api_unary(Graph& g, DType dt, const std::vector<double>& x, F f, std::vector<double> want) {
  CaseIO io;
  GraphTensor t = io.in(g.named_tensor("x", {static_cast<int64_t>(x.size())}, dt), x);
  io.out(f(t), std::move(want));
  return io;
}

const std::vector<double> kA{1, 2, 3, 4, -1};
const std::vector<double> kB{2, 2, 2, 5, -1};

}  // namespace

LUMINAL_OP_CASE(AddCase, api_same_shape) {
  std::vector<double> a = random_values(6, -3, 3, 11), b = random_values(6, -3, 3, 12);
  return api_binary(
      g, DType::F32, quantize(a, DType::F32), quantize(b, DType::F32),
      [](const GraphTensor& x, const GraphTensor& y) { return x + y; },
      map2(quantize(a, DType::F32), quantize(b, DType::F32), std::plus<>()));
}

LUMINAL_OP_CASE(AddCase, api_broadcast_row) {
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {2, 3}), {1, 2, 3, 4, 5, 6});
  GraphTensor b = io.in(g.named_tensor("b", {3}), {10, 20, 30});
  io.out(a + b, {11, 22, 33, 14, 25, 36});
  io.out(b + a, {11, 22, 33, 14, 25, 36});
  return io;
}

LUMINAL_OP_CASE(AddCase, api_broadcast_size1_dims) {
  // [2, 1, 3] + [4, 1] -> [2, 4, 3]: out[i, j, k] = a[i, 0, k] + b[j, 0].
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {2, 1, 3}), {1, 2, 3, 4, 5, 6});
  GraphTensor b = io.in(g.named_tensor("b", {4, 1}), {10, 20, 30, 40});
  std::vector<double> want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 3; ++k) want.push_back((i * 3 + k + 1) + 10.0 * (j + 1));
  io.out(a + b, want);
  return io;
}

LUMINAL_OP_CASE(AddCase, api_i32) {
  return api_binary(g, DType::I32, {1, -2, 7}, {-5, -2, 100},
                    [](const GraphTensor& x, const GraphTensor& y) { return x + y; },
                    {-4, -4, 107});
}
LUMINAL_OP_CASE(AddCase, api_bf16) {
  return api_binary(g, DType::BF16, {1, 0.5, -8}, {2, 0.25, 3},
                    [](const GraphTensor& x, const GraphTensor& y) { return x + y; },
                    {3, 0.75, -5});
}
LUMINAL_OP_CASE(SubCase, f32) {
  return api_binary(g, DType::F32, kA, kB,
                    [](const GraphTensor& x, const GraphTensor& y) { return x - y; },
                    {-1, 0, 1, -1, 0});
}
LUMINAL_OP_CASE(SubCase, i32) {
  return api_binary(g, DType::I32, {5, -3, 0}, {7, -3, -9},
                    [](const GraphTensor& x, const GraphTensor& y) { return x - y; }, {-2, 0, 9});
}
LUMINAL_OP_CASE(SubCase, i64) {
  return api_binary(g, DType::I64, {4294967296.0, 0}, {1, 4294967296.0},
                    [](const GraphTensor& x, const GraphTensor& y) { return x - y; },
                    {4294967295.0, -4294967296.0});
}
LUMINAL_OP_CASE(MulCase, api_broadcast) {
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {2, 2}), {1, 2, 3, 4});
  GraphTensor b = io.in(g.named_tensor("b", {2, 1}), {-1, 10});
  io.out(a * b, {-1, -2, 30, 40});
  return io;
}
LUMINAL_OP_CASE(MulCase, api_i32) {
  return api_binary(g, DType::I32, {3, -4, 0}, {-7, -5, 9},
                    [](const GraphTensor& x, const GraphTensor& y) { return x * y; }, {-21, 20, 0});
}
LUMINAL_OP_CASE(DivCase, f32) {
  return api_binary(g, DType::F32, {1, -3, 7, 0}, {4, 2, 3, -5},
                    [](const GraphTensor& x, const GraphTensor& y) { return x / y; },
                    {0.25, -1.5, 7.0 / 3, 0});
}
LUMINAL_OP_CASE(DivCase, f16) {
  return api_binary(g, DType::F16, {1, -3, 6}, {4, 2, 3},
                    [](const GraphTensor& x, const GraphTensor& y) { return x / y; },
                    {0.25, -1.5, 2});
}
LUMINAL_OP_CASE(ModCase, api_i32) {
  return api_binary(g, DType::I32, {-7, 7, 8}, {3, -3, 4},
                    [](const GraphTensor& x, const GraphTensor& y) { return x % y; }, {-1, 1, 0});
}
LUMINAL_OP_CASE(ModCase, api_f32) {
  return api_binary(g, DType::F32, {5.5, -5.5}, {2, 2},
                    [](const GraphTensor& x, const GraphTensor& y) { return x % y; }, {1.5, -1.5});
}
LUMINAL_OP_CASE(NegCase, f32) {
  return api_unary(g, DType::F32, {1, -2.5, 0}, [](const GraphTensor& x) { return -x; },
                   {-1, 2.5, 0});
}
LUMINAL_OP_CASE(NegCase, i32) {
  return api_unary(g, DType::I32, {1, -2, 0}, [](const GraphTensor& x) { return -x; }, {-1, 2, 0});
}

LUMINAL_OP_CASE(ScalarOpsCase, f32_all_forms) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {3}), {1, -2, 4});
  io.out(x + 1.5, {2.5, -0.5, 5.5});
  io.out(x - 1.5, {-0.5, -3.5, 2.5});
  io.out(x * 3.0, {3, -6, 12});
  io.out(x / 4.0, {0.25, -0.5, 1});
  io.out(1.5 + x, {2.5, -0.5, 5.5});
  io.out(1.5 - x, {0.5, 3.5, -2.5});
  io.out(3.0 * x, {3, -6, 12});
  io.out(4.0 / x, {4, -2, 1});
  return io;
}

LUMINAL_OP_CASE(ScalarOpsCase, i32) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {3}, DType::I32), {1, -2, 4});
  io.out(x + 3.0, {4, 1, 7});
  io.out(x * -2.0, {-2, 4, -8});
  io.out(10.0 - x, {9, 12, 6});
  return io;
}

LUMINAL_OP_CASE(ScalarOpsCase, f16) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {3}, DType::F16), {1, -2, 4});
  io.out(x * 0.5 + 1.0, {1.5, 0, 3});
  return io;
}

// Comparisons on kA vs kB = {1,2,3,4,-1} vs {2,2,2,5,-1}: ties at indices 1 and 4.
LUMINAL_OP_CASE(LtCase, f32) {
  return api_binary(g, DType::F32, kA, kB,
                    [](const GraphTensor& x, const GraphTensor& y) { return x.lt(y); },
                    {1, 0, 0, 1, 0});
}
LUMINAL_OP_CASE(GtCase, f32) {
  return api_binary(g, DType::F32, kA, kB,
                    [](const GraphTensor& x, const GraphTensor& y) { return x.gt(y); },
                    {0, 0, 1, 0, 0});
}
LUMINAL_OP_CASE(LeCase, f32) {
  return api_binary(g, DType::F32, kA, kB,
                    [](const GraphTensor& x, const GraphTensor& y) { return x.le(y); },
                    {1, 1, 0, 1, 1});
}
LUMINAL_OP_CASE(GeCase, f32) {
  return api_binary(g, DType::F32, kA, kB,
                    [](const GraphTensor& x, const GraphTensor& y) { return x.ge(y); },
                    {0, 1, 1, 0, 1});
}
LUMINAL_OP_CASE(EqCase, f32) {
  return api_binary(g, DType::F32, kA, kB,
                    [](const GraphTensor& x, const GraphTensor& y) { return x.eq(y); },
                    {0, 1, 0, 0, 1});
}
LUMINAL_OP_CASE(NeCase, f32) {
  return api_binary(g, DType::F32, kA, kB,
                    [](const GraphTensor& x, const GraphTensor& y) { return x.ne(y); },
                    {1, 0, 1, 1, 0});
}
LUMINAL_OP_CASE(EqCase, i32) {
  return api_binary(g, DType::I32, {5, -5, 0}, {5, 5, 0},
                    [](const GraphTensor& x, const GraphTensor& y) { return x.eq(y); }, {1, 0, 1});
}
LUMINAL_OP_CASE(LtCase, i64) {
  return api_binary(g, DType::I64, {4294967296.0, -1}, {4294967297.0, -2},
                    [](const GraphTensor& x, const GraphTensor& y) { return x.lt(y); }, {1, 0});
}
LUMINAL_OP_CASE(CompareScalarCase, lt_gt) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {4}), {1, 2.5, 3, -4});
  io.out(x.lt(2.5), {1, 0, 0, 1});
  io.out(x.gt(2.5), {0, 0, 1, 0});
  return io;
}
LUMINAL_OP_CASE(CompareCase, broadcast) {
  CaseIO io;
  GraphTensor a = io.in(g.named_tensor("a", {2, 2}), {1, 5, 3, 0});
  GraphTensor b = io.in(g.named_tensor("b", {2}), {2, 2});
  io.out(a.lt(b), {1, 0, 0, 1});
  return io;
}

LUMINAL_OP_CASE(MaximumCase, f32) {
  return api_binary(g, DType::F32, {1, -2, 3, -4}, {-1, -3, 3, 5},
                    [](const GraphTensor& x, const GraphTensor& y) { return x.maximum(y); },
                    {1, -2, 3, 5});
}
LUMINAL_OP_CASE(MaximumCase, i32) {
  return api_binary(g, DType::I32, {1, -2, 7}, {0, -1, 7},
                    [](const GraphTensor& x, const GraphTensor& y) { return x.maximum(y); },
                    {1, -1, 7});
}
LUMINAL_OP_CASE(MinimumCase, f32) {
  return api_binary(g, DType::F32, {1, -2, 3, -4}, {-1, -3, 3, 5},
                    [](const GraphTensor& x, const GraphTensor& y) { return x.minimum(y); },
                    {-1, -3, 3, -4});
}
LUMINAL_OP_CASE(MinimumCase, i64) {
  return api_binary(g, DType::I64, {-4294967296.0, 2}, {0, 1},
                    [](const GraphTensor& x, const GraphTensor& y) { return x.minimum(y); },
                    {-4294967296.0, 1});
}

}  // namespace luminal::ops_test
