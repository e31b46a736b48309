// Reduction API: sum, max, mean over every axis of a 3-D tensor (negative axes too); mean and max
// against PyTorch fixtures, sums by plain loops.
#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

const std::vector<int64_t> kDims{2, 3, 4};

/// x [2, 3, 4] (seeded) -> sum/max(axis) vs reduce3.
CaseIO hand_reduce(Graph& g, DType dt, int axis, bool is_max, uint32_t seed) {
  CaseIO io;
  std::vector<double> x = quantize(random_values(24, -4, 4, seed), dt);
  if (!is_float(dt)) x = ramp(24, -12, 1);
  GraphTensor t = io.in(g.named_tensor("x", {2, 3, 4}, dt), x);
  int pos = axis < 0 ? axis + 3 : axis;
  io.out(is_max ? t.max(axis) : t.sum(axis), reduce3(x, kDims, pos, is_max));
  return io;
}

}  // namespace

LUMINAL_OP_CASE(SumCase, axis0) { return hand_reduce(g, DType::F32, 0, false, 21); }
LUMINAL_OP_CASE(SumCase, axis1) { return hand_reduce(g, DType::F32, 1, false, 22); }
LUMINAL_OP_CASE(SumCase, axis2) { return hand_reduce(g, DType::F32, 2, false, 23); }
LUMINAL_OP_CASE(SumCase, axis_neg1) { return hand_reduce(g, DType::F32, -1, false, 24); }
LUMINAL_OP_CASE(SumCase, i32_axis0) { return hand_reduce(g, DType::I32, 0, false, 0); }
LUMINAL_OP_CASE(SumCase, i64_axis2) { return hand_reduce(g, DType::I64, 2, false, 0); }
LUMINAL_OP_CASE(SumCase, bf16_axis1) { return hand_reduce(g, DType::BF16, 1, false, 25); }
LUMINAL_OP_CASE(MaxCase, axis1_hand) { return hand_reduce(g, DType::F32, 1, true, 26); }
LUMINAL_OP_CASE(MaxCase, axis_neg2) { return hand_reduce(g, DType::F32, -2, true, 27); }
LUMINAL_OP_CASE(MaxCase, i32_axis2) { return hand_reduce(g, DType::I32, 2, true, 0); }

LUMINAL_OP_CASE(MaxCase, axis0_fixture) {
  return fixture_unary(g, "max_axis0", [](const GraphTensor& x) { return x.max(0); });
}
LUMINAL_OP_CASE(MaxCase, axis2_fixture) {
  return fixture_unary(g, "max_axis2", [](const GraphTensor& x) { return x.max(2); });
}
LUMINAL_OP_CASE(MeanCase, axis1_fixture) {
  return fixture_unary(g, "mean_axis1", [](const GraphTensor& x) { return x.mean(1); });
}
LUMINAL_OP_CASE(MeanCase, axis2_hand) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 1, 4}), {1, 2, 3, 4, -1, -1, -1, 5});
  io.out(x.mean(2), {2.5, 0.5});
  return io;
}

LUMINAL_OP_CASE(SumCase, two_axes) {
  // Summing axis 2 then axis 0 of [2, 3, 4] = ramp: out[j] = sum_{i,k} (12 i + 4 j + k).
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 3, 4}), ramp(24));
  std::vector<double> want;
  for (int j = 0; j < 3; ++j) {
    double s = 0;
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) s += 12 * i + 4 * j + k;
    want.push_back(s);
  }
  io.out(x.sum(2).sum(0), want);
  return io;
}

LUMINAL_OP_CASE(SumCase, to_scalar) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {5}), {1, 2, 3, 4, 5.5});
  io.out(x.sum(0), {15.5});
  return io;
}

}  // namespace luminal::ops_test
