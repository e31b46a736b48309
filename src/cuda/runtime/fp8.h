// The fp8 precision's pieces that are not cuBLASLt: row-wise e4m3 quantization (the device
// kernel's source and launch) and its exact host emulation, which tests compare the GPU against.
#pragma once

#include <cstdint>
#include <string>

#include "cuda/runtime/cuda_plan.h"

namespace luminal::cuda {

/// Rows per block of the quantization kernel (a warp each).
inline constexpr unsigned kFp8RowsPerBlock = 8;
/// The kernel's entry point.
inline constexpr const char* kFp8QuantizeEntry = "luminal_fp8_quantize_rows";

/// NVRTC source of the quantization kernel (src/cuda/kernels/fp8_quantize.cuh).
std::string fp8_quantize_source();

/// The launch quantizing `rows` bf16 rows of `cols` values (row stride `ld`, 16-byte aligned,
/// cols % 8 == 0) at x into contiguous e4m3 rows at q and one float scale per row.
Launch fp8_quantize_launch(CUfunction fn, CUdeviceptr x, CUdeviceptr q, CUdeviceptr scale,
                           int64_t rows, int64_t cols, int64_t ld);

/// float -> e4m3 (OCP "fn": no infinities, NaN = 0x7F), round to nearest even, saturating at
/// +-448: what the kernel's cvt.rn.satfinite does.
uint8_t e4m3_from_float(float f);
/// e4m3 -> float (exact).
float e4m3_to_float(uint8_t q);
/// The kernel's quantization of one row of bf16 bits: writes cols e4m3 bytes, returns the scale.
float fp8_quantize_row(const uint16_t* x, int64_t cols, uint8_t* q);

}  // namespace luminal::cuda
