// Primitive cases built from raw nodes: Input, Output (through views), Constant, Iota, Cast.
// Expectations are hand-computed; f16/bf16 constants were checked with numpy/torch once.
#include <cmath>

#include "ops/cases/case_util.h"

namespace luminal::ops_test {
namespace {

/// Input -> Output of one dtype must round-trip the (dtype-representable) values exactly.
CaseIO identity(Graph& g, DType dt, std::vector<double> vals) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {static_cast<int64_t>(vals.size())}, dt), vals);
  io.out(prim_output(g, x), vals);
  return io;
}

}  // namespace

LUMINAL_OP_CASE(InputCase, identity_f32) {
  return identity(g, DType::F32, {1.5, -2.25, 0.1f, 3e7});
}
LUMINAL_OP_CASE(InputCase, identity_f64) {
  return identity(g, DType::F64, {0.1, 1e-300, -1e300, 3});
}
LUMINAL_OP_CASE(InputCase, identity_f16) {
  return identity(g, DType::F16, {0.5, -1.25, 1024, 0.0999755859375});
}
LUMINAL_OP_CASE(InputCase, identity_bf16) {
  return identity(g, DType::BF16, {0.5, -3, 65536, 0.10009765625});
}
LUMINAL_OP_CASE(InputCase, identity_i32) {
  return identity(g, DType::I32, {-2147483648.0, -1, 0, 2147483647});
}
LUMINAL_OP_CASE(InputCase, identity_i64) {
  return identity(g, DType::I64, {-1099511627779.0, 0, 7, 1099511627779.0});
}
LUMINAL_OP_CASE(InputCase, identity_i8) { return identity(g, DType::I8, {-128, -1, 0, 127}); }
LUMINAL_OP_CASE(InputCase, identity_u8) { return identity(g, DType::U8, {0, 1, 200, 255}); }
LUMINAL_OP_CASE(InputCase, identity_bool) { return identity(g, DType::Bool, {1, 0, 0, 1}); }

LUMINAL_OP_CASE(OutputCase, permuted_view) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 3}), {1, 2, 3, 4, 5, 6});
  std::vector<int> order{1, 0};
  io.out(prim_output(g, with_view(x, x.view.permute(order))), {1, 4, 2, 5, 3, 6});
  return io;
}

LUMINAL_OP_CASE(OutputCase, broadcast_view) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {3}), {7, 8, 9});
  io.out(prim_output(g, with_view(x, x.view.expand(0, 2))), {7, 8, 9, 7, 8, 9});
  return io;
}

LUMINAL_OP_CASE(OutputCase, sliced_view) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2, 4}), {1, 2, 3, 4, 5, 6, 7, 8});
  io.out(prim_output(g, with_view(x, x.view.slice(1, 1, 3))), {2, 3, 6, 7});
  return io;
}

LUMINAL_OP_CASE(OutputCase, padded_view) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {3}), {4, 5, 6});
  io.out(prim_output(g, with_view(x, x.view.pad(0, 1, 2))), {0, 4, 5, 6, 0, 0});
  return io;
}

LUMINAL_OP_CASE(OutputCase, two_outputs) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2}, DType::I32), {-3, 4});
  io.out(prim_output(g, x), {-3, 4});
  io.out(prim_output(g, with_view(x, x.view.slice(0, 1, 2))), {4});
  return io;
}

LUMINAL_OP_CASE(ConstantCase, scalar_f32) {
  CaseIO io;
  io.out(prim_output(g, prim(g, OpKind::Constant, DType::F32, {}, {}, 2.5)), {2.5});
  return io;
}

LUMINAL_OP_CASE(ConstantCase, broadcast_i32) {
  CaseIO io;
  GraphTensor c = prim(g, OpKind::Constant, DType::I32, {}, {}, -7);
  io.out(prim_output(g, with_view(c, c.view.expand(0, 2).expand(0, 2))), {-7, -7, -7, -7});
  return io;
}

LUMINAL_OP_CASE(ConstantCase, f16_rounding) {
  CaseIO io;
  io.out(prim_output(g, prim(g, OpKind::Constant, DType::F16, {}, {}, 0.1)), {0.0999755859375});
  return io;
}

LUMINAL_OP_CASE(ConstantCase, graph_constant_f64) {
  CaseIO io;
  io.out(g.constant(0.1, DType::F64), {0.1});
  return io;
}

LUMINAL_OP_CASE(IotaCase, i32) {
  CaseIO io;
  io.out(prim_output(g, prim(g, OpKind::Iota, DType::I32, {}, {5})), {0, 1, 2, 3, 4});
  return io;
}

LUMINAL_OP_CASE(IotaCase, i64) {
  CaseIO io;
  io.out(prim_output(g, prim(g, OpKind::Iota, DType::I64, {}, {3})), {0, 1, 2});
  return io;
}

LUMINAL_OP_CASE(IotaCase, arange_f32) {
  CaseIO io;
  io.out(g.arange(4, DType::F32), {0, 1, 2, 3});
  return io;
}

LUMINAL_OP_CASE(IotaCase, arange_dynamic) {
  CaseIO io;
  io.dyn = {{"n", 6}};
  io.out(g.arange(Expr::sym("n")), {0, 1, 2, 3, 4, 5});
  return io;
}

namespace {

/// Input of dtype `from` -> Cast to `to` -> Output.
CaseIO cast_case(Graph& g, DType from, DType to, std::vector<double> vals,
                 std::vector<double> want) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {static_cast<int64_t>(vals.size())}, from), vals);
  io.out(prim_output(g, prim(g, OpKind::Cast, to, {x}, x.dims())), std::move(want));
  return io;
}

}  // namespace

LUMINAL_OP_CASE(CastCase, f32_to_i32_truncates) {
  return cast_case(g, DType::F32, DType::I32, {-2.7, -0.5, 0.5, 2.7, 3.0, -3.0, 100.99},
                   {-2, 0, 0, 2, 3, -3, 100});
}
LUMINAL_OP_CASE(CastCase, i32_to_f32) {
  // 2^24 + 1 is not representable in f32 and rounds to even (2^24).
  return cast_case(g, DType::I32, DType::F32, {-3, 0, 7, 16777217}, {-3, 0, 7, 16777216});
}
LUMINAL_OP_CASE(CastCase, f32_to_f16) {
  return cast_case(g, DType::F32, DType::F16, {0.1, 1.0 / 3, 65504, 1e-5, -2.5},
                   {0.0999755859375, 0.333251953125, 65504, 1.0013580322265625e-05, -2.5});
}
LUMINAL_OP_CASE(CastCase, f32_f16_f32_roundtrip) {
  CaseIO io;
  GraphTensor x = io.in(g.named_tensor("x", {2}), {0.1, 3.14159265});
  GraphTensor h = prim(g, OpKind::Cast, DType::F16, {x}, x.dims());
  io.out(prim_output(g, prim(g, OpKind::Cast, DType::F32, {h}, h.dims())),
         {0.0999755859375, 3.140625});
  return io;
}
LUMINAL_OP_CASE(CastCase, f32_to_bf16) {
  return cast_case(g, DType::F32, DType::BF16, {0.1, 1.0 / 3, 70000, -2.5},
                   {0.10009765625, 0.333984375, 70144, -2.5});
}
LUMINAL_OP_CASE(CastCase, f16_to_f32) {
  return cast_case(g, DType::F16, DType::F32, {0.0999755859375, -1024, 0.5},
                   {0.0999755859375, -1024, 0.5});
}
LUMINAL_OP_CASE(CastCase, f32_to_f64) {
  return cast_case(g, DType::F32, DType::F64, {0.1, -2}, {static_cast<double>(0.1f), -2});
}
LUMINAL_OP_CASE(CastCase, f32_to_bool) {
  return cast_case(g, DType::F32, DType::Bool, {0, -1.5, 2, 0, 1e-30}, {0, 1, 1, 0, 1});
}
LUMINAL_OP_CASE(CastCase, bool_to_f32) {
  return cast_case(g, DType::Bool, DType::F32, {1, 0, 1}, {1, 0, 1});
}
LUMINAL_OP_CASE(CastCase, i64_to_i32) {
  return cast_case(g, DType::I64, DType::I32, {-5, 123456, 0}, {-5, 123456, 0});
}
LUMINAL_OP_CASE(CastCase, i32_to_i64) {
  return cast_case(g, DType::I32, DType::I64, {-2147483648.0, 9}, {-2147483648.0, 9});
}
LUMINAL_OP_CASE(CastCase, u8_to_f32) {
  return cast_case(g, DType::U8, DType::F32, {0, 200, 255}, {0, 200, 255});
}
LUMINAL_OP_CASE(CastCase, i32_to_bool) {
  return cast_case(g, DType::I32, DType::Bool, {0, -3, 5}, {0, 1, 1});
}

}  // namespace luminal::ops_test
