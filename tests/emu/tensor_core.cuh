// Host stand-in for src/cuda/kernels/tensor_core.cuh: the same API on cuda_emu.h. Shared addresses
// are offsets into the block's shared bytes; cp.async copies read their source at issue and land in
// shared memory only when a wait_group lets their group (so a stage read before its wait, or a
// thread exiting with copies in flight, shows); ldmatrix and mma.sync exchange each lane's operands through the warp's slots and apply
// the PTX ISA's fragment tables, written out here independently of the kernels.
#pragma once

#include <atomic>
#include <cstring>

#include "common.cuh"
#include "cuda_emu.h"

#define LUM_DYNAMIC_SHARED(name, align) unsigned char* name = emu::current->shared.data()

namespace lum_tc {

template <bool F16>
float to_f32(unsigned short h) {
  return F16 ? lum_f16_to_f32(h) : lum_bf16_to_f32(h);
}
template <bool F16>
unsigned short from_f32(float f) {
  return F16 ? lum_f32_to_f16(f) : lum_f32_to_bf16(f);
}

inline unsigned shared_address(const void* p) {
  return unsigned(static_cast<const unsigned char*>(p) - emu::current->shared.data());
}
inline void copy16(unsigned dst, const void* src, bool valid) {
  emu::PendingCopy c{emu::current->shared.data() + dst, {}};
  if (valid) std::memcpy(c.bytes, src, 16);
  emu::open_copies.push_back(c);
}
inline void commit() {
  emu::copy_groups.push_back(std::move(emu::open_copies));
  emu::open_copies.clear();
}
/// Lands every committed group but the newest `Pending` (uncommitted copies stay in flight).
template <int Pending>
void wait_pending() {
  while (emu::copy_groups.size() > size_t(Pending)) {
    for (const emu::PendingCopy& c : emu::copy_groups.front()) std::memcpy(c.dst, c.bytes, 16);
    emu::copy_groups.erase(emu::copy_groups.begin());
  }
}

/// Matrix j's row i comes from lane 8 j + i's address; lane l gets row l / 4, halves 2 (l % 4) and
/// 2 (l % 4) + 1, of each matrix.
inline void ldmatrix4(unsigned (&r)[4], unsigned addr) {
  emu::slots_of(threadIdx.x)[0] = addr;
  emu::warp_sync();
  const unsigned warp0 = threadIdx.x / 32 * 32, l = emu::lane();
  for (int j = 0; j < 4; ++j) {
    const unsigned row = emu::slots_of(warp0 + 8 * j + l / 4)[0];
    std::memcpy(&r[j], emu::current->shared.data() + row + 4 * (l % 4), 4);
  }
  emu::warp_sync();
}

/// m16n8k16: A[r][k] is in lane (r % 8) * 4 + (k % 8) / 2, register r / 8 + 2 (k / 8), half k % 2;
/// B[k][n] in lane n * 4 + (k % 8) / 2, register k / 8, half k % 2; C[r][n] in lane (r % 8) * 4 +
/// n / 2, element 2 (r / 8) + n % 2. Products summed in float, k in order.
template <bool F16>
void mma(float (&c)[4], const unsigned (&a)[4], unsigned b0, unsigned b1) {
  unsigned* mine = emu::slots_of(threadIdx.x);
  for (int i = 0; i < 4; ++i) mine[i] = a[i];
  mine[4] = b0, mine[5] = b1;
  emu::warp_sync();
  const unsigned warp0 = threadIdx.x / 32 * 32, l = emu::lane();
  auto half = [](unsigned word, int h) {
    const auto bits = static_cast<uint16_t>(word >> (16 * h));
    return F16 ? luminal::f16_bits_to_f32(bits) : luminal::bf16_bits_to_f32(bits);
  };
  auto A = [&](int r, int k) { return half(emu::slots_of(warp0 + (r % 8) * 4 + (k % 8) / 2)[r / 8 + 2 * (k / 8)], k % 2); };
  auto B = [&](int k, int n) { return half(emu::slots_of(warp0 + n * 4 + (k % 8) / 2)[4 + k / 8], k % 2); };
  float d[4];
  for (int e = 0; e < 4; ++e) {
    const int r = int(l / 4) + 8 * (e / 2), n = 2 * int(l % 4) + e % 2;
    float s = 0.f;
    for (int k = 0; k < 16; ++k) s += A(r, k) * B(k, n);
    d[e] = c[e] + s;
  }
  emu::warp_sync();
  for (int e = 0; e < 4; ++e) c[e] = d[e];
}

inline unsigned short load_cg16(const unsigned short* p) { return *p; }
inline float load_cg_f32(const float* p) { return *p; }
inline int load_acquire(const int* p) { return std::atomic_ref<int>(*const_cast<int*>(p)).load(std::memory_order_acquire); }
inline void add_release(int* p, int v) { std::atomic_ref<int>(*p).fetch_add(v, std::memory_order_release); }
inline int fetch_add(int* p, int v) { return std::atomic_ref<int>(*p).fetch_add(v); }
inline void pause(unsigned ns) { __nanosleep(ns); }

}  // namespace lum_tc
