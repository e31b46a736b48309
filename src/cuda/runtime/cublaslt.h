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

/// A matmul ready to launch: descriptors and the algorithm chosen for its shape and alignments.
class MatmulCall {
 public:
  MatmulCall(CublasLt& lt, const MatmulShape& s, const MatmulPointers& p);
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
  /// Enqueues the GEMM with the current algorithm; cuBLASLt's status (0 = success).
  int gemm(CUstream stream, CUdeviceptr workspace) const;
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
  /// is the NVRTC target for the fallback epilogue kernel. `tf32`: f32 matmuls on TF32 tensor
  /// cores (throws "[cuda] ..." on devices before sm_80, which have none).
  /// `autotune`: each new shape times the heuristic's top algorithms on the device and keeps the
  /// fastest (CudaOptions::matmul_autotune).
  CublasLt(const DeviceInfo& dev, std::string target, bool tf32 = false, bool autotune = false);
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
  bool tf32_ = false;  // CudaOptions::precision == TF32
  bool autotune_ = false;
  size_t tuned_ = 0;
  StreamHandle tune_stream_;  // autotuning runs here, apart from the plan's stream
  EventHandle tune_start_, tune_end_;
  std::shared_ptr<DeviceAllocation> tune_workspace_;  // autotuning never touches workspace_
  std::map<std::string, std::unique_ptr<Algo>> algos_;  // by shape + alignment key
  EpilogueKernels epilogue_;
};

}  // namespace luminal::cuda
