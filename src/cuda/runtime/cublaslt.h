// Matmuls through cuBLASLt: row-major views, strided batches, bias and ReLU epilogues.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "cuda/runtime/handles.h"
#include "cuda/runtime/matmul_epilogue.h"
#include "cuda/runtime/memory.h"
#include "luminal/dtype.h"
#include "luminal/precision.h"

namespace luminal::cuda {

/// One matmul with every Expr evaluated: C[b] = A[b] @ B[b] (+ bias) (ReLU), all strides in
/// elements, A [m, k] with (a_row, a_col), B [k, n] with (b_row, b_col), C [m, n] contiguous.
struct MatmulShape {
  DType dtype = DType::F32;
  int64_t batch = 1, m = 0, n = 0, k = 0;
  int64_t a_row = 0, a_col = 0, a_batch = 0;
  int64_t b_row = 0, b_col = 0, b_batch = 0;
  bool bias = false, relu = false;
  /// FP8 tensor cores (dtype BF16 only): A and B are e4m3 with float scales per row of A and per
  /// column of B (MatmulPointers::a_scale / b_scale), A [m, k] and B^T [n, k] contiguous; C bf16.
  bool fp8 = false;
  int algo = 0;  // index into the heuristic's list (the last one when it is shorter)
  int split_k = 1;  // k split over this many slices (1: none; runs unsplit where unsupported)
  /// "2048x8x13" (batch prefixed when > 1, epilogue suffixed).
  std::string to_string() const;
};

/// Device pointers of one matmul (A and B already offset to their first element).
struct MatmulPointers {
  CUdeviceptr a = 0, b = 0, c = 0, bias = 0;
  CUdeviceptr a_scale = 0, b_scale = 0;  // fp8: m and n floats
};

class CublasLt;

/// How f32 matmuls use the tensor cores: not at all (exact fp32), on TF32 inputs, or as three TF32
/// products of the operands' high and low TF32 parts (lo*hi + hi*lo + hi*hi: ~fp32 accuracy).
enum class Fp32Math : uint8_t { Exact, TF32, TF32x3 };

/// The f32 matmul math of a compile precision (TF32 and TF32X3; Exact for the rest).
inline Fp32Math fp32_math(Precision p) {
  return p == Precision::TF32 ? Fp32Math::TF32 : p == Precision::TF32X3 ? Fp32Math::TF32x3 : Fp32Math::Exact;
}

/// A matmul ready to launch: descriptors and the algorithm chosen for its shape and alignments.
class MatmulCall {
 public:
  MatmulCall(CublasLt& lt, const MatmulShape& s, const MatmulPointers& p);
  /// `whole` false: one TF32x3 partial product (never split again, its own epilogue dropped).
  MatmulCall(CublasLt& lt, const MatmulShape& s, const MatmulPointers& p, bool whole);
  ~MatmulCall();
  MatmulCall(const MatmulCall&) = delete;
  MatmulCall& operator=(const MatmulCall&) = delete;
  /// Enqueues the matmul on stream (capturable into a CUDA graph).
  void run(CUstream stream) const;
  /// False when the result is empty at these dims (run() enqueues nothing).
  bool launches() const { return mode_ != Mode::Skip; }

 private:
  friend class CublasLt;
  struct Descs;
  /// Index of the fastest of `count` cublasLtMatmulAlgo_t candidates, timed on the device.
  size_t fastest(const void* candidates, size_t count);
  /// Enqueues the GEMM with the current algorithm on operands a and b (ptr_'s unless given),
  /// adding to C when `accumulate`; cuBLASLt's status (0 = success).
  int gemm(CUstream stream, CUdeviceptr workspace) const { return gemm(stream, workspace, ptr_.a, ptr_.b, false); }
  int gemm(CUstream stream, CUdeviceptr workspace, CUdeviceptr a, CUdeviceptr b, bool accumulate) const;
  /// TF32x3: splits A and B into scratch hi / lo copies (same layouts), then runs the partial
  /// products smallest first into C and the whole (hi*hi, with the epilogue) last.
  void run_split(CUstream stream) const;
  /// Allocates the TF32x3 parts and the partial-product call (TF32x3 f32 matmuls only).
  void init_split(const MatmulPointers& p, const std::string& what);
  struct Split;
  std::unique_ptr<Split> split_;
  CublasLt& lt_;
  MatmulShape shape_;
  MatmulPointers ptr_;
  enum class Mode { Skip, Zero, Gemm } mode_ = Mode::Gemm;
  std::unique_ptr<Descs> d_;
  // Bias / ReLU as a separate kernel when cuBLASLt has no fused epilogue for this dtype.
  CUfunction post_fn_ = nullptr;
  unsigned post_blocks_ = 0;
  unsigned long long post_values_[5] = {};
  void* post_params_[5] = {};
};

/// A cuBLASLt handle with its workspace and a per-shape cache of heuristic algorithm choices.
class CublasLt {
 public:
  /// Creates the handle and a workspace on dev (the device's context must be current); `target`
  /// is the NVRTC target for the fallback epilogue kernel. `math`: how f32 matmuls use the
  /// tensor cores (TF32 and TF32x3 throw "[cuda] ..." on devices before sm_80, which have none).
  /// `autotune`: each new shape times the heuristic's top algorithms on the device and keeps the
  /// fastest (CudaOptions::matmul_autotune).
  CublasLt(const DeviceInfo& dev, std::string target, Fp32Math math = Fp32Math::Exact,
           bool autotune = false);
  ~CublasLt();
  CublasLt(const CublasLt&) = delete;
  CublasLt& operator=(const CublasLt&) = delete;
  /// How many (shape, alignment) algorithm choices were made so far; a new one may use cuBLASLt
  /// kernels not loaded yet, so it must run once outside graph capture.
  size_t algorithms_chosen() const { return algos_.size(); }
  /// How many of those choices were timed (autotuning with more than one candidate).
  size_t algorithms_tuned() const { return tuned_; }

 private:
  friend class MatmulCall;
  struct Algo;
  const DeviceInfo& dev_;
  void* handle_ = nullptr;  // cublasLtHandle_t
  std::shared_ptr<DeviceAllocation> workspace_;
  size_t workspace_bytes_ = 0;
  Fp32Math math_ = Fp32Math::Exact;  // from the compile precision (fp32, tf32, tf32x3)
  bool autotune_ = false;
  size_t tuned_ = 0;
  StreamHandle tune_stream_;  // autotuning runs here, apart from the plan's stream
  EventHandle tune_start_, tune_end_;
  std::shared_ptr<DeviceAllocation> tune_workspace_;  // autotuning never touches workspace_
  std::map<std::string, std::unique_ptr<Algo>> algos_;  // by shape + alignment key
  EpilogueKernels epilogue_;
};

}  // namespace luminal::cuda
