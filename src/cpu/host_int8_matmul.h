// The CPU backend's int8 GEMM (compile precision int8): weights quantized per output column
// (symmetric s8, packed once per weight version through WeightPacks), activations quantized per call
// over the whole tensor (symmetric s8), s8 x s8 on oneDNN's AMX / VNNI kernels with the scales, the
// bias and ReLU as post-ops, written in the float dtype. oneDNN 2.6 runs int8 matmuls with runtime
// output scales (or a per-row post-op) only on its gemm:jit / reference kernels
// (bench/cpu_gemm/onednn_int8.cpp), so the scales go in as a per-column binary multiply.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "cpu/weight_pack.h"
#include "luminal/dtype.h"

namespace luminal::cpu {

/// One int8 GEMM shape: c[m, n] = relu?(a[m, k] W[k, n] + bias[n]) with a, W and c in one float
/// dtype (F32 or BF16).
class Int8Matmul {
 public:
  /// nullptr when oneDNN has no JIT (brgemm) int8 kernel for the shape here, or the weights'
  /// packed copy does not fit `packs`' budget.
  static std::unique_ptr<Int8Matmul> make(int64_t m, int64_t n, int64_t k, DType dt, bool bias, bool relu,
                                          WeightPacks* packs);
  ~Int8Matmul();
  Int8Matmul(const Int8Matmul&) = delete;
  Int8Matmul& operator=(const Int8Matmul&) = delete;

  /// Runs on a (rows of k elements `a_row` apart) and weights with element (kk, j) at
  /// w[kk * b_row + j * b_col] of version `w_version` (nonzero: quantized again only when it or the
  /// address changes); bias (read when make() was told so) holds bias_dt. False, with c untouched,
  /// when a or W hold a NaN or infinity (int8 cannot carry them: the caller runs its float GEMM,
  /// so a bad input's NaN reaches the output as it would there).
  bool run(const std::byte* a, int64_t a_row, const std::byte* w, int64_t b_row, int64_t b_col, uint64_t w_version,
           std::byte* c, const std::byte* bias, DType bias_dt);
  /// "onednn brg:avx512_core_amx_int8 (int8: ...)".
  const std::string& impl() const { return impl_; }

 private:
  Int8Matmul() = default;
  void quantize_weights(DType dt, const std::byte* w, int64_t b_row, int64_t b_col);

  int64_t m_ = 0, n_ = 0, k_ = 0;
  DType dt_ = DType::F32;
  bool bias_ = false;
  WeightPacks* packs_ = nullptr;
  dnnl::matmul prim_;
  dnnl::memory src_, dst_, col_scale_mem_, col_bias_mem_;
  dnnl::memory::desc wei_plain_, wei_packed_;
  std::string impl_;
  // The quantized weights ([n, k], row j = column j of W) and their scales, made from w_data_ at
  // w_version_.
  std::vector<int8_t> wq_;
  std::vector<float> w_scale_;
  const std::byte* w_data_ = nullptr;
  uint64_t w_version_ = 0;
  bool w_finite_ = true;
  std::vector<int8_t> a8_;   // this call's quantized activations
  std::vector<float> col_scale_, col_bias_;  // this call's scale per column, the bias as f32
};

}  // namespace luminal::cpu
