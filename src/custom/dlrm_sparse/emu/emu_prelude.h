// Host emulation of the CUDA features dlrm_sparse.cuh uses: one std::thread per CUDA thread, a
// std::barrier per block (__syncthreads) and per warp (__syncwarp, __any_sync). Checks the kernel's
// index math, chunking, pair tiling, clamping and NaN rows on a machine without a GPU (not its
// speed, alignment or memory model).
#pragma once
#include <barrier>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <vector>
#include "luminal/dtype.h"
#define __device__
#define __host__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)
struct uint4 {
  unsigned x, y, z, w;
};
struct uint2 {
  unsigned x, y;
};
struct float2 {
  float x, y;
};
struct float4 {
  float x, y, z, w;
};
struct Dim3 {
  unsigned x = 0, y = 0, z = 0;
};
inline thread_local Dim3 threadIdx, blockIdx;
template <class T>
T __ldg(const T* p) {
  return *p;
}
inline float __uint_as_float(unsigned u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline float __int_as_float(int u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline unsigned short host_bf16(float f) { return luminal::f32_to_bf16_bits(f); }
inline int atomicOr(int* p, int v) { return __atomic_fetch_or(p, v, __ATOMIC_SEQ_CST); }
struct EmuBlock {
  std::unique_ptr<std::barrier<>> block;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<int> votes;
  std::vector<unsigned> frags;  // per warp: 32 lanes x (a[4], b0, b1) for emu_mma_16816
  std::vector<float> smem = std::vector<float>(60000, NAN);  // poison: T must be fully written
};
inline EmuBlock* g_block = nullptr;
inline float* emu_smem() { return g_block->smem.data(); }
inline void __syncthreads() { g_block->block->arrive_and_wait(); }
inline void __syncwarp() { g_block->warps[threadIdx.x / 32]->arrive_and_wait(); }
inline bool __any_sync(unsigned, bool p) {
  const unsigned w = threadIdx.x / 32;
  g_block->warps[w]->arrive_and_wait();
  if (p) __atomic_store_n(&g_block->votes[w], 1, __ATOMIC_SEQ_CST);
  g_block->warps[w]->arrive_and_wait();
  const bool r = __atomic_load_n(&g_block->votes[w], __ATOMIC_SEQ_CST) != 0;
  g_block->warps[w]->arrive_and_wait();
  if (threadIdx.x % 32 == 0) g_block->votes[w] = 0;
  g_block->warps[w]->arrive_and_wait();
  return r;
}
// mma.sync m16n8k16 (bf16 in, fp32 accumulate) from the PTX ISA's fragment tables, written out
// independently of the kernel: A[r][k] lives in lane (r % 8) * 4 + (k % 8) / 2, register
// r / 8 + 2 (k / 8), half k % 2; B[k][n] in lane n * 4 + (k % 8) / 2, register k / 8, half k % 2;
// C[r][n] in lane (r % 8) * 4 + n / 2, element 2 (r / 8) + n % 2.
inline void emu_mma_16816(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  const unsigned w = threadIdx.x / 32, lane = threadIdx.x % 32;
  unsigned* f = g_block->frags.data() + w * 32 * 6;
  for (int i = 0; i < 4; ++i) f[lane * 6 + i] = a[i];
  f[lane * 6 + 4] = b0, f[lane * 6 + 5] = b1;
  g_block->warps[w]->arrive_and_wait();
  auto half = [](unsigned word, int h) {
    return luminal::bf16_bits_to_f32(uint16_t(word >> (16 * h)));
  };
  auto A = [&](int r, int k) {
    return half(f[((r % 8) * 4 + (k % 8) / 2) * 6 + r / 8 + 2 * (k / 8)], k % 2);
  };
  auto B = [&](int k, int n) { return half(f[(n * 4 + (k % 8) / 2) * 6 + 4 + k / 8], k % 2); };
  for (int e = 0; e < 4; ++e) {
    const int r = int(lane / 4) + 8 * (e / 2), n = 2 * int(lane % 4) + e % 2;
    float s = 0.f;
    for (int k = 0; k < 16; ++k) s += A(r, k) * B(k, n);
    c[e] += s;
  }
  g_block->warps[w]->arrive_and_wait();
}

/// A host kernel launcher: inputs, per-input element counts, out, error word, grid, block.
using EmuRun = void (*)(const void**, const long long*, void*, int*, unsigned, unsigned);

// Blocks run one after another; the threads of a block concurrently. A thread that returns early
// leaves its barriers (arrive_and_drop), as an exited CUDA thread no longer counts.
template <class F>
void emu_launch(unsigned grid, unsigned block, F f) {
  for (unsigned b = 0; b < grid; ++b) {
    EmuBlock eb;
    eb.block = std::make_unique<std::barrier<>>(block);
    for (unsigned w = 0; w < block / 32; ++w)
      eb.warps.push_back(std::make_unique<std::barrier<>>(32));
    eb.votes.assign(block / 32, 0);
    eb.frags.assign(block / 32 * 32 * 6, 0);
    g_block = &eb;
    std::vector<std::thread> ts;
    for (unsigned t = 0; t < block; ++t)
      ts.emplace_back([&, t] {
        threadIdx.x = t;
        blockIdx.x = b;
        f();
        eb.block->arrive_and_drop();
        eb.warps[t / 32]->arrive_and_drop();
      });
    for (auto& th : ts) th.join();
  }
}
