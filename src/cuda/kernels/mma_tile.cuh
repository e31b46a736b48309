// A warp's share of a k-32 step of a tensor-core GEMM over shared-memory stages of 64-byte rows
// (32 16-bit k values, four 16-byte chunks XOR-swizzled by row / 2 so the eight rows one ldmatrix
// reads land in distinct banks): A rows [wm, wm + 16 MT), B rows (output columns) [wn, wn + 8 NT),
// mma.sync m16n8k16 into fp32 accumulators. Built on tensor_core.cuh's helpers only, so the host
// emulation (tests/emu) runs this very code over its stand-in. Include it after tensor_core.cuh (it
// includes nothing itself: a quoted include would find the real tensor_core.cuh beside it before
// the emulation's stand-in). Used by cross_gemm.cuh's and mlp_chain.cuh's mma.sync cores.
#pragma once

namespace lum_tc {

constexpr int kStageRowBytes = 64;  // one stage row: k 32 of 16-bit values

/// Byte offset of 16-byte chunk c of row r in a stage.
__device__ __forceinline__ unsigned swizzled(int r, int c) {
  return unsigned(r * kStageRowBytes + ((c ^ ((r >> 1) & 3)) << 4));
}

/// acc[i][j] += A[wm + 16 i .., k 0-31] B[wn + 8 j .., k 0-31]^T for stage tiles at shared addresses
/// a_tile and b_tile (both k-contiguous). Accumulator element e of (i, j): row lane / 4 + 8 (e / 2),
/// column 2 (lane % 4) + e % 2.
template <bool F16, int MT, int NT>
__device__ __forceinline__ void warp_mma_k32(float (&acc)[MT][NT][4], unsigned a_tile, unsigned b_tile, int wm, int wn,
                                             int lane) {
  static_assert(NT % 2 == 0, "B fragments come two n8 tiles per ldmatrix");
#pragma unroll
  for (int kk = 0; kk < 2; ++kk) {
    unsigned af[MT][4], bf[NT / 2][4];
#pragma unroll
    for (int i = 0; i < MT; ++i)  // matrices: rows 0-7 / 8-15 x k 0-7 / 8-15 = a0, a1, a2, a3
      ldmatrix4(af[i], a_tile + swizzled(wm + i * 16 + lane % 8 + 8 * ((lane / 8) % 2), 2 * kk + lane / 16));
#pragma unroll
    for (int j = 0; j < NT / 2; ++j)  // n 0-7 x k 0-7 / 8-15, then n 8-15: b0, b1 of two n8 tiles
      ldmatrix4(bf[j], b_tile + swizzled(wn + j * 16 + lane % 8 + 8 * (lane / 16), 2 * kk + (lane / 8) % 2));
#pragma unroll
    for (int i = 0; i < MT; ++i)
#pragma unroll
      for (int j = 0; j < NT; ++j) mma<F16>(acc[i][j], af[i], bf[j / 2][2 * (j % 2)], bf[j / 2][2 * (j % 2) + 1]);
  }
}

}  // namespace lum_tc
