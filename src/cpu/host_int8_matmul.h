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
#include <unordered_map>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

#include "cpu/weight_pack.h"
#include "luminal/dtype.h"

namespace luminal::cpu {

/// One step's weights W[k, n] quantized for int8 GEMMs: per output column, symmetric s8, stored
/// [n, k] (row j = column j of W). Shared by every shape the step runs at.
struct Int8Weights {
  std::vector<int8_t> q;
  std::vector<float> scale;  // per column
  bool finite = true;        // false: W holds a NaN or infinity (int8 cannot carry it)
  uint64_t generation = 0;   // new with every quantization (what a packed copy was made from)
  /// Quantizes W (element (kk, j) at w[kk * b_row + j * b_col] in dt) unless it already holds
  /// these bytes: the same address, layout and nonzero input version. Returns `finite`.
  bool update(DType dt, const std::byte* w, int64_t b_row, int64_t b_col, int64_t n, int64_t k, uint64_t version);

 private:
  const std::byte* data_ = nullptr;
  int64_t b_row_ = 0, b_col_ = 0, n_ = 0, k_ = 0;
  uint64_t version_ = 0;
};

/// One int8 GEMM shape: c[m, n] = relu?(a[m, k] W[k, n] + bias[n]) with a, W and c in one float
/// dtype (F32 or BF16).
class Int8Matmul {
 public:
  /// nullptr when oneDNN has no JIT (brgemm) int8 kernel for the shape here, or the weights'
  /// packed copy does not fit `packs`' budget. Packed copies are keyed by `weights`, so shapes of
  /// one step that ask for the same layout share one.
  static std::unique_ptr<Int8Matmul> make(int64_t m, int64_t n, int64_t k, DType dt, bool bias, bool relu,
                                          const Int8Weights* weights, WeightPacks* packs);
  ~Int8Matmul();
  Int8Matmul(const Int8Matmul&) = delete;
  Int8Matmul& operator=(const Int8Matmul&) = delete;

  /// Runs on a (rows of k elements `a_row` apart) and make()'s weights, updated; bias (read when
  /// make() was told so) holds bias_dt. False, with c untouched, when a holds a NaN or infinity
  /// (int8 cannot carry it: the caller runs its float GEMM, so a bad input's NaN reaches the
  /// output as it would there).
  bool run(const std::byte* a, int64_t a_row, std::byte* c, const std::byte* bias, DType bias_dt);
  /// "onednn brg:avx512_core_amx_int8 (int8: ...)".
  const std::string& impl() const { return impl_; }

 private:
  Int8Matmul() = default;

  int64_t m_ = 0, n_ = 0, k_ = 0;
  DType dt_ = DType::F32;
  bool bias_ = false;
  const Int8Weights* weights_ = nullptr;
  WeightPacks* packs_ = nullptr;
  dnnl::matmul prim_;
  dnnl::memory src_, dst_, col_scale_mem_, col_bias_mem_;
  std::unordered_map<int, dnnl::memory> args_;  // the handles above by oneDNN argument (weights per run)
  dnnl::memory::desc wei_plain_, wei_packed_;
  std::string impl_;
  std::vector<int8_t> a8_;   // this call's quantized activations
  std::vector<float> col_scale_, col_bias_;  // this call's scale per column, the bias as f32
};

}  // namespace luminal::cpu
