// The cross_layer rule: a DCNv2 cross layer's second GEMM with its epilogue,
//   x_{l+1} = x0 * (u W^T + b) + x_l      (torchrec LowRankCrossNet, nn::low_rank_cross)
// offered as custom::CrossGemm, one kernel that never writes u W^T + b (CUDA: a tensor-core GEMM
// with the epilogue; CPU: a oneDNN matmul with binary post-ops), instead of the GEMM library's
// kernel and an elementwise kernel reading its [B, n] result back. Found by structure:
// the canonical matmul (SumReduce over k of Mul(u[M, 1, k], W^T[1, n, k])), then + b[n], * x0,
// + x_l, each the only user of the one before; x0 and x_l read whole. The search times the kernel
// against the decomposition.
#include <fmt/format.h>

#include "compiler/rules/linear_match.h"
#include "compiler/rules/rules.h"
#include "custom/cross_gemm/op.h"

namespace luminal::compiler::rules {

std::vector<RuleMatch> find_cross_layer(const RuleContext& ctx) {
  const Graph& g = ctx.graph;
  const Users users = users_of(g);
  std::vector<RuleMatch> out;
  for (NodeId id = 0; id < g.size(); ++id) {
    const auto f = match_cross(g, users, id);
    if (!f) continue;
    const int64_t n = f->w.dims()[0].as_const().value(), k = f->w.dims()[1].as_const().value();
    const DType dt = f->u.dtype;
    RuleMatch m{"cross_layer", fmt::format("x0 * (u W^T + b) + x_l, n {} k {} {}", n, k, dtype_name(dt)), {}};
    const bool cuda = ctx.backend != nullptr && ctx.backend->kind() == "cuda";
    std::string refusal;
    if (ctx.backend == nullptr || !ctx.backend->has_kernel("cross_gemm"))
      refusal = "no cross_gemm kernel on this backend";
    else if (cuda && dt != DType::BF16 && dt != DType::F16)
      refusal = fmt::format("the CUDA kernel multiplies f16 / bf16, not {}", dtype_name(dt));
    else if (cuda && (n % 8 != 0 || k % 8 != 0))
      refusal = fmt::format("the CUDA kernel needs n {} and k {} multiples of 8", n, k);
    const CrossFound found = *f;
    Alternative a{"fused", refusal, {}};
    // Search-only on CUDA: which wins depends on the batch (H100, DLRM-v2 bf16, 2026-12-07: fused
    // 3% faster end to end at batch 2048, 6% at 16384, 13% slower at 270), so the search times it
    // (and checks its outputs) per bucket; the default plan keeps the decomposition. The wgmma
    // core's overlapped-stage forms (CrossGemmShape::overlap) lost at every batch: bench-only.
    a.search_only = cuda;
    using Map = std::function<GraphTensor(const GraphTensor&)>;
    auto fused = [found](int tile_m) {
      return Replacement{found.root, [found, tile_m](Graph&, const Map& map) {
                           return custom::cross_gemm(map(found.u), map(found.w), map(found.b), map(found.x0),
                                                     map(found.xl), true, 3, false, tile_m);
                         }};
    };
    a.replacement = fused(128);
    m.alternatives.push_back(a);
    // On CUDA also with 64-row tiles (wgmma cores; twice the blocks where 128-row tiles leave SMs
    // idle, as at 270 rows: 81 blocks on 132 SMs). Search-only and not yet measured.
    if (cuda) {
      a.name = "fused_m64";
      a.replacement = fused(64);
      m.alternatives.push_back(std::move(a));
    }
    m.alternatives.push_back({"decomposed", "", {}});
    out.push_back(std::move(m));
  }
  return out;
}

}  // namespace luminal::compiler::rules
