// custom::CrossGemm on the CPU: x0 * (u W^T + b) + xl as one oneDNN matmul primitive, the bias in
// the primitive and x0, xl as binary post-ops (multiply, then add), so u W^T + b is never written
// and read back (the graph's plan runs the GEMM, then a loop over three [B, n] tensors). A constant
// W (nonzero version) is read from a packed copy (weight_pack.h).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "cpu/weight_pack.h"
#include "custom/cross_gemm/op.h"

namespace luminal::cpu {

/// One CrossGemm's primitive for one set of input dims.
class HostCrossGemm {
 public:
  /// The kernel for these input dims (u [m, k], W [n, k], b [n], x0, xl [m, n]) in `dtype`,
  /// packing a constant W into `packs` (nullptr: never); null when oneDNN has no such primitive on
  /// this CPU (bf16 without AVX-512 BF16: the decomposition then runs, its matmul widened to f32).
  static std::unique_ptr<HostCrossGemm> make(const custom::CrossGemm& op,
                                             const std::vector<std::vector<int64_t>>& dims, DType dtype,
                                             WeightPacks* packs);
  ~HostCrossGemm();
  /// Runs on the op's inputs; `w_version` is W's input version (0: W may change between calls).
  void run(const HostKernelArgs& args, uint64_t w_version);

 private:
  struct Primitive;
  explicit HostCrossGemm(std::unique_ptr<Primitive> p);
  std::unique_ptr<Primitive> p_;
};

}  // namespace luminal::cpu
