// Helpers shared by the custom ops' host kernels (src/custom/*/host.cpp): indices of either
// dtype, inline bf16 conversions and row prefetching for embedding gathers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <utility>

/// Compiles a hot host function three times (x86-64-v4 = AVX-512, v3 = AVX2 + FMA, baseline),
/// the CPU picking one when the library loads: the library is built for baseline x86-64 so that it
/// runs everywhere, and its host kernels ran on SSE2 (Kaggle's sparse kernel: 2x slower).
/// Helpers it calls must be inline so that they are compiled into each copy.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define LUMINAL_HOST_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define LUMINAL_HOST_CLONES
#endif

namespace luminal::custom::host {

/// Rows prefetched ahead of the one being summed (the gathers are cache misses on large tables).
inline constexpr int kPrefetchRows = 4;
/// Bags prefetched ahead of the one being pooled: one-hot bags have no next row in the bag, so
/// without it every lookup waited for DRAM (Kaggle bf16, 26 one-hot tables, batch 2048, 2 cores:
/// 4.6 ms in the sparse kernel).
inline constexpr int kPrefetchBags = 4;

/// Element j of an i32 or i64 index array.
inline int64_t index_at(const void* p, bool i64, int64_t j) {
  return i64 ? static_cast<const int64_t*>(p)[j] : static_cast<const int32_t*>(p)[j];
}

/// bf16 bits -> float, inline (dtype.h's are out of line: a call per element cost 4x in a bag loop).
inline float bf16_to_f32(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// float -> bf16 bits, round to nearest even; NaN stays NaN.
inline uint16_t f32_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

/// 16 floats as one GCC vector (a zmm register on AVX-512, two ymm on AVX2).
typedef float Float16 __attribute__((vector_size(64)));
/// The shuffle masks of Float16.
typedef int32_t Int16 __attribute__((vector_size(64)));

/// Lane c of the two-vector shuffle (lanes 16.. are b's) that keeps a's lane where bit h of c is
/// clear and takes b's lane c - h where it is set; the mirror shuffle's lane is this + h.
constexpr int32_t swap_lane(int c, int h) { return (c & h) != 0 ? 16 + c - h : c; }

/// One stage of transpose16x16: swaps the off-diagonal H x H blocks of every 2H x 2H block.
/// always_inline with no vector parameters: an out-of-line call (-O0) from a target_clones copy
/// would pass 64-byte vectors under the baseline ABI and corrupt them.
template <int H>
[[gnu::always_inline]] inline void transpose_stage(Float16* v) {
  const Int16 lo = {swap_lane(0, H),  swap_lane(1, H),  swap_lane(2, H),  swap_lane(3, H),
                    swap_lane(4, H),  swap_lane(5, H),  swap_lane(6, H),  swap_lane(7, H),
                    swap_lane(8, H),  swap_lane(9, H),  swap_lane(10, H), swap_lane(11, H),
                    swap_lane(12, H), swap_lane(13, H), swap_lane(14, H), swap_lane(15, H)};
  const Int16 hi = lo + H;
  for (int r = 0; r < 16; ++r)
    if ((r & H) == 0) {
      const Float16 a = v[r], b = v[r + H];
      v[r] = __builtin_shuffle(a, b, lo);
      v[r + H] = __builtin_shuffle(a, b, hi);
    }
}

/// 16 x 16 floats transposed: dst[c * dst_stride + r] = src[r * src_stride + c]. GCC vector
/// shuffles (vpermt2ps on AVX-512: 64 for the tile, where scalar copies were 256 stores); inline,
/// so each LUMINAL_HOST_CLONES copy gets its own instruction set.
[[gnu::always_inline]] inline void transpose16x16(const float* src, int64_t src_stride, float* dst,
                                                  int64_t dst_stride) {
  Float16 v[16];
  for (int r = 0; r < 16; ++r) std::memcpy(&v[r], src + r * src_stride, 64);
  transpose_stage<8>(v);  // the four stages compose to the transpose
  transpose_stage<4>(v);
  transpose_stage<2>(v);
  transpose_stage<1>(v);
  for (int r = 0; r < 16; ++r) std::memcpy(dst + r * dst_stride, &v[r], 64);
}

/// Bag b's index range [lo, hi) from PyTorch EmbeddingBag offsets, n_off of them: bag b ends at
/// offsets[b + 1], the last of open offsets at nnz (closed offsets carry one more entry than
/// bags). Offsets negative, past nnz or decreasing set error bit 4 and are clamped into [0, nnz].
inline std::pair<int64_t, int64_t> bag_range(const void* offsets, bool i64, int64_t b, int64_t n_off,
                                             int64_t nnz, int& err) {
  int64_t lo = index_at(offsets, i64, b);
  int64_t hi = b + 1 < n_off ? index_at(offsets, i64, b + 1) : nnz;
  if (lo < 0 || hi > nnz || lo > hi) {
    err |= 4;
    lo = std::clamp<int64_t>(lo, 0, nnz);
    hi = std::clamp<int64_t>(hi, lo, nnz);
  }
  return {lo, hi};
}

/// Prefetches row `r` (row_bytes at `table`) when it is a valid index.
[[gnu::always_inline]] inline void prefetch_row(const void* table, size_t row_bytes, int64_t rows, int64_t r) {
  if (r < 0 || r >= rows) return;
  const char* p = static_cast<const char*>(table) + size_t(r) * row_bytes;
  for (size_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(p + o);
}

/// Calls add(row) (or add(row, j) when it takes the position j too: per-sample weights) for
/// indices[lo..hi) of a table of `rows` rows of `row_bytes` at `table`, prefetching kPrefetchRows
/// rows ahead; an index outside [0, rows) sets error bit 1 and is clamped.
template <class Add>
[[gnu::always_inline]] inline void for_each_bag_row(const void* table, size_t row_bytes, int64_t rows, const void* indices,
                      bool i64, int64_t lo, int64_t hi, int& err, Add add) {
  for (int64_t j = lo; j < hi; ++j) {
    if (j + kPrefetchRows < hi) prefetch_row(table, row_bytes, rows, index_at(indices, i64, j + kPrefetchRows));
    int64_t r = index_at(indices, i64, j);
    if (r < 0 || r >= rows) {
      err |= 1;
      r = r < 0 || rows <= 0 ? 0 : rows - 1;
    }
    if constexpr (std::is_invocable_v<Add, int64_t, int64_t>)
      add(r, j);
    else
      add(r);
  }
}

/// acc[k] += codes[r, k] * scale_r + bias_r for k < d: row r of a row-wise 8-bit table
/// (scale_bias [rows, 2]) added in fp32.
[[gnu::always_inline]] inline void add_rowwise_u8(const void* codes, const float* scale_bias, int64_t r, int64_t d,
                                                  float* acc) {
  const uint8_t* q = static_cast<const uint8_t*>(codes) + r * d;
  const float scale = scale_bias[2 * r], bias = scale_bias[2 * r + 1];
#pragma omp simd
  for (int64_t k = 0; k < d; ++k) acc[k] += float(q[k]) * scale + bias;
}

/// One table's bags as a host kernel reads them: rows of row_bytes at data, indices [nnz] and
/// offsets [batch] (i32 or i64, PyTorch EmbeddingBag's bag starts).
struct BagTable {
  const void *data, *indices, *offsets;
  int64_t rows, nnz;
  size_t row_bytes;
};

/// Prefetches the first kPrefetchRows rows of bag b (for_each_bag_row prefetches the rest) of
/// n_off offsets (bag_range's); an out-of-range bag or offset is skipped here and reported when the
/// bag is pooled.
[[gnu::always_inline]] inline void prefetch_bag(const BagTable& t, bool i64, int64_t b, int64_t n_off) {
  if (b >= n_off) return;
  const int64_t lo = index_at(t.offsets, i64, b);
  const int64_t hi = std::min(b + 1 < n_off ? index_at(t.offsets, i64, b + 1) : t.nnz, lo + kPrefetchRows);
  for (int64_t j = std::max<int64_t>(lo, 0); j < std::min(hi, t.nnz); ++j)
    prefetch_row(t.data, t.row_bytes, t.rows, index_at(t.indices, i64, j));
}

/// Bag b of table t pooled into acc[0, d) in fp32: zeroed, add(row) per index (for_each_bag_row:
/// prefetching, bad indices clamped with error bit 1, bad offsets error bit 4), then divided by
/// the bag's length when `mean` (an empty bag stays zeros).
template <class Add>
[[gnu::always_inline]] inline void pool_bag(const BagTable& t, bool i64, int64_t b, int64_t n_off, bool mean,
                                            int64_t d, float* acc, int& err, Add add) {
  const auto [lo, hi] = bag_range(t.offsets, i64, b, n_off, t.nnz, err);
  std::fill(acc, acc + d, 0.f);
  for_each_bag_row(t.data, t.row_bytes, t.rows, t.indices, i64, lo, hi, err, add);
  if (mean && hi > lo)
    for (int64_t k = 0; k < d; ++k) acc[k] /= float(hi - lo);
}

}  // namespace luminal::custom::host
