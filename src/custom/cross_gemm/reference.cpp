// CrossGemm's checks, its reference decomposition and the graph builder.
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "custom/cross_gemm/op.h"

namespace luminal::custom {

void CrossGemmShape::validate() const {
  if (n < 1 || k < 1)
    throw std::invalid_argument(fmt::format("[cross_gemm] n {} and k {} must be positive", n, k));
  if (stages != 3 && stages != 4)
    throw std::invalid_argument(fmt::format("[cross_gemm] {} stages, expected 3 or 4", stages));
  if (tile_m != 128 && tile_m != 64)
    throw std::invalid_argument(fmt::format("[cross_gemm] tile_m {}, expected 128 or 64", tile_m));
  if (dtype != DType::F32 && dtype != DType::F16 && dtype != DType::BF16)
    throw std::invalid_argument(fmt::format("[cross_gemm] dtype {}, expected f32, f16 or bf16", dtype_name(dtype)));
}

CrossGemm::CrossGemm(CrossGemmShape shape) : shape_(shape) { shape_.validate(); }

GraphTensor CrossGemm::decompose(Graph& g, const std::vector<GraphTensor>& inputs) const {
  (void)g;
  if (inputs.size() != 5)
    throw std::invalid_argument(fmt::format("[cross_gemm] {} inputs, expected 5 (u, W, b, x0, xl)", inputs.size()));
  const GraphTensor &u = inputs[0], &w = inputs[1], &b = inputs[2], &x0 = inputs[3], &xl = inputs[4];
  return x0 * (u.matmul(w.transpose(0, 1)) + b) + xl;
}

GraphTensor cross_gemm(const GraphTensor& u, const GraphTensor& w, const GraphTensor& b, const GraphTensor& x0,
                       const GraphTensor& xl, bool wgmma, int stages, bool overlap, int tile_m) {
  CrossGemmShape s;
  s.dtype = u.dtype;
  s.wgmma = wgmma, s.stages = stages, s.overlap = overlap, s.tile_m = tile_m;
  const auto n = w.rank() == 2 ? w.dims()[0].as_const() : std::nullopt;
  const auto k = u.rank() == 2 ? u.dims()[1].as_const() : std::nullopt;
  if (!n || !k)
    throw std::invalid_argument(fmt::format("[cross_gemm] u {} and W {} must be [M, k] and [n, k] of concrete n, k",
                                            shape_string(u.dims()), shape_string(w.dims())));
  s.n = *n, s.k = *k;
  s.validate();
  const Expr m = u.dims()[0];
  auto expect = [&](const char* what, const GraphTensor& t, const std::vector<Expr>& shape) {
    bool same = t.rank() == int(shape.size());
    for (size_t d = 0; same && d < shape.size(); ++d) same = t.dims()[d].same(shape[d]);
    if (!same || t.dtype != s.dtype)
      throw std::invalid_argument(fmt::format("[cross_gemm] {} is {} {}, expected {} {}", what, shape_string(t.dims()),
                                              dtype_name(t.dtype), shape_string(shape), dtype_name(s.dtype)));
  };
  expect("W", w, {Expr(s.n), Expr(s.k)});
  expect("b", b, {Expr(s.n)});
  expect("x0", x0, {m, Expr(s.n)});
  expect("xl", xl, {m, Expr(s.n)});
  return custom_op(std::make_shared<CrossGemm>(s), {u, w, b, x0, xl});
}

}  // namespace luminal::custom
