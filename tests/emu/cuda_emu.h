// Host emulation of the CUDA execution model for kernel headers (*.cuh) on a machine without a GPU:
// every CUDA thread a std::thread, __syncthreads a std::barrier per block, warp collectives
// (ldmatrix, mma.sync) a std::barrier per warp around shared slots, the block's dynamic shared
// memory a byte vector (poisoned), global atomics std::atomic_ref. Checks a kernel's indexing,
// fragment layouts, pipelining order and inter-block protocol; not its speed or PTX's memory model.
// The stand-ins for common.cuh and tensor_core.cuh in this folder include it; a test puts this
// folder first on the include path and includes the kernel header.
#pragma once

#include <atomic>
#include <barrier>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <vector>

#define __device__
#define __global__
#define __forceinline__ inline
#define __launch_bounds__(...)

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};
inline thread_local Dim3 threadIdx, blockIdx;
inline Dim3 gridDim, blockDim;

namespace emu {

/// One running block: its barriers, shared memory and the slots its warps exchange values through.
struct Block {
  explicit Block(unsigned threads, size_t shared_bytes)
      : sync(threads), shared(shared_bytes, 0xA5), slots(size_t(threads) * 8) {
    for (unsigned w = 0; w < (threads + 31) / 32; ++w) warps.push_back(std::make_unique<std::barrier<>>(32));
  }
  std::barrier<> sync;
  std::vector<std::unique_ptr<std::barrier<>>> warps;
  std::vector<unsigned char> shared;
  std::vector<unsigned> slots;  // 8 words per thread
};
inline thread_local Block* current = nullptr;

/// A cp.async copy in flight: its 16 bytes (read at issue), where they land, or zeros.
struct PendingCopy {
  unsigned char* dst;
  unsigned char bytes[16];
};
/// This thread's copies: the committed groups (oldest first) and the open one. They land only when
/// a wait_group lets them, so a read of a stage before its wait sees the poison.
inline thread_local std::vector<std::vector<PendingCopy>> copy_groups;
inline thread_local std::vector<PendingCopy> open_copies;

inline unsigned lane() { return threadIdx.x % 32; }
inline void warp_sync() { current->warps[threadIdx.x / 32]->arrive_and_wait(); }
/// Thread t's 8 exchange words (t: an index in the block).
inline unsigned* slots_of(unsigned t) { return current->slots.data() + size_t(t) * 8; }

/// Runs f() on every thread of a 1-D grid: `together` blocks at a time concurrently (each block's
/// threads concurrently), in block order. Blocks that only wait on work of earlier blocks finish
/// with together = 1; more lets blocks interleave and wait on each other.
template <class F>
void launch(unsigned grid, unsigned block, size_t shared_bytes, unsigned together, F f) {
  gridDim = {grid, 1, 1};
  blockDim = {block, 1, 1};
  for (unsigned first = 0; first < grid; first += together) {
    const unsigned count = std::min(together, grid - first);
    std::vector<std::unique_ptr<Block>> blocks;
    for (unsigned b = 0; b < count; ++b) blocks.push_back(std::make_unique<Block>(block, shared_bytes));
    std::vector<std::thread> threads;
    for (unsigned b = 0; b < count; ++b)
      for (unsigned t = 0; t < block; ++t)
        threads.emplace_back([&, b, t] {
          current = blocks[b].get();
          blockIdx = {first + b, 0, 0};
          threadIdx = {t, 0, 0};
          f();
          if (!copy_groups.empty() || !open_copies.empty()) {  // a kernel must wait for its copies
            std::fprintf(stderr, "emu: thread %u of block %u exited with cp.async copies not waited for\n", t, first + b);
            std::abort();
          }
          current->sync.arrive_and_drop();  // an exited thread no longer counts
          current->warps[t / 32]->arrive_and_drop();
        });
    for (std::thread& t : threads) t.join();
  }
}

}  // namespace emu

inline void __syncthreads() { emu::current->sync.arrive_and_wait(); }
inline void __threadfence() { std::atomic_thread_fence(std::memory_order_seq_cst); }
inline int atomicAdd(int* p, int v) { return std::atomic_ref<int>(*p).fetch_add(v); }
inline void __nanosleep(unsigned) { std::this_thread::yield(); }
inline float __int_as_float(int u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
