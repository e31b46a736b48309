// The CPU backend's GEMV: one activation row against a weight stored as PyTorch keeps it ([n, k],
// each output's k contiguous), streamed once. A decode step's matmuls are all this shape; oneDNN's
// matmul read bf16 weights at ~70% of the measured read bandwidth there (Llama-3.2-1B, 2 cores),
// so HostMatmul times both at the first call of a shape and keeps the faster.
#pragma once

#include <cstddef>
#include <cstdint>

#include "luminal/dtype.h"

namespace luminal::cpu {

/// Whether gemv() runs this dtype (F32, BF16; the bias in the same dtype or F32).
bool gemv_supports(DType dt, DType bias_dt);

/// y[j] = relu?(sum_k x[k] * w[j * ldw + k] + bias[j]) for j < n, accumulated in fp32 and rounded
/// once to dt; x [k], w rows of k at stride ldw, y [n] contiguous, bias [n] or null. Rows are split
/// over OpenMP's threads.
void gemv(DType dt, const std::byte* x, const std::byte* w, int64_t ldw, int64_t n, int64_t k,
          std::byte* y, const std::byte* bias, DType bias_dt, bool relu);

}  // namespace luminal::cpu
