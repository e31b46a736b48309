// Helpers shared by the custom ops' host kernels (src/custom/*/host.cpp): indices of either
// dtype, inline bf16 conversions and row prefetching for embedding gathers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

namespace luminal::custom::host {

/// Rows prefetched ahead of the one being summed (the gathers are cache misses on large tables).
inline constexpr int kPrefetchRows = 4;

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

/// Bag b's index range [lo, hi) from PyTorch EmbeddingBag offsets (the last bag ends at nnz).
/// Offsets negative, past nnz or decreasing set error bit 4 and are clamped into [0, nnz].
inline std::pair<int64_t, int64_t> bag_range(const void* offsets, bool i64, int64_t b, int64_t batch,
                                             int64_t nnz, int& err) {
  int64_t lo = index_at(offsets, i64, b);
  int64_t hi = b + 1 < batch ? index_at(offsets, i64, b + 1) : nnz;
  if (lo < 0 || hi > nnz || lo > hi) {
    err |= 4;
    lo = std::clamp<int64_t>(lo, 0, nnz);
    hi = std::clamp<int64_t>(hi, lo, nnz);
  }
  return {lo, hi};
}

/// Calls add(row) for indices[lo..hi) of a table of `rows` rows of `row_bytes` at `table`,
/// prefetching kPrefetchRows rows ahead; an index outside [0, rows) sets error bit 1 and is clamped.
template <class Add>
void for_each_bag_row(const void* table, size_t row_bytes, int64_t rows, const void* indices,
                      bool i64, int64_t lo, int64_t hi, int& err, Add add) {
  for (int64_t j = lo; j < hi; ++j) {
    if (j + kPrefetchRows < hi) {
      const int64_t ahead = index_at(indices, i64, j + kPrefetchRows);
      if (ahead >= 0 && ahead < rows) {
        const char* p = static_cast<const char*>(table) + size_t(ahead) * row_bytes;
        for (size_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(p + o);
      }
    }
    int64_t r = index_at(indices, i64, j);
    if (r < 0 || r >= rows) {
      err |= 1;
      r = r < 0 || rows <= 0 ? 0 : rows - 1;
    }
    add(r);
  }
}

}  // namespace luminal::custom::host
