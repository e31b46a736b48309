// DlrmSparse on the CPU: each sample's bags pooled in fp32 (the next rows prefetched, as the
// gathers are cache misses on large tables), then the pairwise dots, written straight into the
// output row. Samples are split over OpenMP's threads.
#include <algorithm>
#include <vector>

#include "custom/dlrm_sparse/op.h"
#include "custom/host_kernel_util.h"

namespace luminal::custom {

namespace {

inline float to_f32(uint16_t h) { return host::bf16_to_f32(h); }

// One table: its bags, and the row-wise u8 format's scale and bias per row.
struct Table {
  host::BagTable bags;
  const float* scale_bias;
};

// Adds table row r into acc (fp32); D as sample's.
template <int D>
[[gnu::always_inline]] inline void add_row(const DlrmSparseShape& s, const Table& t, int64_t r, float* acc) {
  const int64_t d = D > 0 ? D : s.dim;
  if (s.format == TableFormat::RowwiseU8) {
    host::add_rowwise_u8(t.bags.data, t.scale_bias, r, d, acc);
  } else if (s.dtype == DType::BF16) {
    const uint16_t* q = static_cast<const uint16_t*>(t.bags.data) + r * d;
#pragma omp simd
    for (int64_t k = 0; k < d; ++k) acc[k] += to_f32(q[k]);
  } else {
    const float* q = static_cast<const float*>(t.bags.data) + r * d;
#pragma omp simd
    for (int64_t k = 0; k < d; ++k) acc[k] += q[k];
  }
}

// Pools sample b's bag of table t into acc; sets error bits for bad offsets / indices.
template <int D>
[[gnu::always_inline]] inline void pool(const DlrmSparseShape& s, const Table& t, int64_t b, int64_t n_off, float* acc, int& err) {
  const int64_t d = D > 0 ? D : s.dim;
  host::pool_bag(t.bags, s.index_dtype == DType::I64, b, n_off, s.mode == nn::BagMode::Mean, d, acc, err,
                 [&](int64_t r) { add_row<D>(s, t, r, acc); });
  if (s.dtype == DType::BF16)  // a bf16 model's bags are bf16
    for (int64_t k = 0; k < d; ++k) acc[k] = to_f32(host::f32_to_bf16(acc[k]));
}


// One call's inputs and output, and the per-sample sizes.
struct Job {
  DlrmSparseShape s;
  std::vector<Table> tables;
  const void* x;
  void* out;
  int64_t batch, n, np, width;  // samples, features (1 + tables), n rounded to 16, output row width
  int64_t n_off;                // offsets per table: batch, or batch + 1 when closed
  bool i64;
};

// Rows of Z = T T^T computed together (independent FMA chains; 8 x 16 floats fill half the AVX-512 registers).
constexpr int kRows = 8;

// A thread's scratch: T = [x, bag_0, ..., bag_{k-1}] of one sample (zero rows up to np + kRows),
// T transposed (blocks of 16 features, zero-padded), the output row in fp32 (16 floats of slack:
// pairs are stored 16 at a time), one row block's dots.
struct Scratch {
  std::vector<float> feats, cols, out, tile;
  explicit Scratch(const Job& j)
      : feats(size_t((j.np + kRows) * j.s.dim)), cols(size_t(j.s.dim * j.np)), out(size_t(j.width + 16)),
        tile(size_t(kRows * j.np)) {}
};

// Sample b: its bags pooled, then [x, pairs] written to its output row. D > 0: the dim as a
// constant (small dims: the loops unroll; at d = 4 the runtime-bound loops' overhead was most of
// a sample's ~140 ns on one thread); D = 0: s.dim.
template <int D>
LUMINAL_HOST_CLONES void sample(const Job& j, int64_t b, Scratch& sc, int& err) {
  const DlrmSparseShape& s = j.s;
  const int64_t d = D > 0 ? D : s.dim, n = j.n;
  if (b + host::kPrefetchBags < j.batch)  // the rows of a later sample: its lookups overlap this one's work
    for (const Table& t : j.tables) host::prefetch_bag(t.bags, j.i64, b + host::kPrefetchBags, j.n_off);
  float* T = sc.feats.data();
  for (int64_t k = 0; k < d; ++k)
    T[k] = s.dtype == DType::BF16 ? to_f32(static_cast<const uint16_t*>(j.x)[b * d + k])
                                  : static_cast<const float*>(j.x)[b * d + k];
  for (int64_t t = 0; t < s.tables(); ++t) pool<D>(s, j.tables[size_t(t)], b, j.n_off, T + (t + 1) * d, err);
  // T transposed in blocks of 16 features, [np / 16][d][16]: a block's k-th 16 values sit at a
  // constant offset from one pointer (a [d, np] layout held 16 row pointers live and spilled them).
  // Whole 16 x 16 tiles when d allows (rows past n: feats' zero padding), else element by element
  // (the scalar stores were a quarter of a sample's time at d = 128).
  float* cols = sc.cols.data();
  if (d % 16 == 0) {
    for (int64_t f0 = 0; f0 < j.np; f0 += 16)
      for (int64_t k0 = 0; k0 < d; k0 += 16) host::transpose16x16(T + f0 * d + k0, d, cols + f0 * d + k0 * 16, 16);
  } else {
    for (int64_t f = 0; f < n; ++f)
      for (int64_t k = 0; k < d; ++k) cols[(f / 16) * d * 16 + k * 16 + f % 16] = T[f * d + k];
  }
  float* out = sc.out.data();
  std::copy(T, T + d, out);
  // Z = T T^T's lower triangle, kRows rows of Z at a time against 16 columns (one block of cols):
  // kRows independent accumulators, as one accumulator's chain of d dependent FMAs left the FMA
  // units idle (at d = 128 the pairs were 7.4 of a 13 ms MLPerf-shaped batch). Each dot is still
  // summed in k order. Lanes past a row's end (q >= i) are computed and dropped.
  float* tile = sc.tile.data();  // [kRows][np]: this row block's dots
  int64_t col = d;
  for (int64_t i0 = 1; i0 < n; i0 += kRows) {
    const int64_t last = std::min(i0 + kRows, n) - 1;
    for (int64_t q0 = 0; q0 < last; q0 += 16) {
      float acc[kRows][16] = {};
      const float* block = cols + q0 * d;  // block q0 / 16
      const float* rows = T + i0 * d;      // rows past n read the zeroed padding of feats
      for (int64_t k = 0; k < d; ++k) {
        const float* c = block + k * 16;
        for (int r = 0; r < kRows; ++r) {
          const float v = rows[r * d + k];
#pragma omp simd
          for (int q = 0; q < 16; ++q) acc[r][q] += v * c[q];
        }
      }
      for (int r = 0; r < kRows; ++r) std::copy(acc[r], acc[r] + 16, tile + r * j.np + q0);
    }
    for (int64_t i = i0; i <= last; ++i) {
      const float* z = tile + (i - i0) * j.np;
      for (int64_t q0 = 0; q0 < i; q0 += 16) {
        if (s.pairs == nn::PairOrder::Lower) {
          // All 16 lanes stored, rows in order: lanes past row i's end land in the next row's
          // columns (written after this) or the padding / slack (zeroed below). A copy of `count`
          // floats compiled to `rep movsq`, a third of a sample's time on one thread.
#pragma omp simd
          for (int q = 0; q < 16; ++q) out[col + q0 + q] = z[q0 + q];
        } else {  // torchrec's order: pair (q, i) of row q of the upper triangle
          const int64_t count = std::min<int64_t>(16, i - q0);
          for (int64_t q = 0; q < count; ++q) out[d + nn::pair_column(s.pairs, n, i, q0 + q)] = z[q0 + q];
        }
      }
      col += i;
    }
  }
  std::fill(out + col, out + j.width, 0.f);
  if (s.dtype == DType::BF16) {
    uint16_t* o = static_cast<uint16_t*>(j.out) + b * j.width;
#pragma omp simd
    for (int64_t k = 0; k < j.width; ++k) o[k] = host::f32_to_bf16(out[k]);
  } else {
    std::copy(out, out + j.width, static_cast<float*>(j.out) + b * j.width);
  }
}

}  // namespace

std::optional<HostKernel> DlrmSparse::host_kernel(const KernelRequest& request) const {
  const DlrmSparseShape s = shape_;
  if (s.bags_only || request.dims.empty() || request.dims[0].size() != 2) return std::nullopt;
  const int64_t batch = request.dims[0][0];
  return [s, batch](const HostKernelArgs& a) {
    const int64_t per = s.inputs_per_table();
    const bool u8 = s.format == TableFormat::RowwiseU8;
    Job j{s, {}, a.inputs[0], a.output, batch, s.tables() + 1, 0, s.padded_width(), batch + (s.closed ? 1 : 0),
          s.index_dtype == DType::I64};
    const size_t row_bytes = size_t(s.dim) * (u8 ? 1 : dtype_size(s.dtype));
    j.np = (j.n + 15) / 16 * 16;
    for (int64_t t = 0; t < s.tables(); ++t) {
      const size_t base = 1 + size_t(t * per);
      const host::BagTable bags{a.inputs[base], a.inputs[base + (u8 ? 2 : 1)], a.inputs[base + (u8 ? 3 : 2)],
                                s.rows[size_t(t)], a.counts[base + (u8 ? 2 : 1)], row_bytes};
      j.tables.push_back({bags, u8 ? static_cast<const float*>(a.inputs[base + 1]) : nullptr});
    }
    // The dims DLRMs use get their own instance (dim a constant); others the generic one.
    void (*per_sample)(const Job&, int64_t, Scratch&, int&) = &sample<0>;
    switch (s.dim) {
      case 4: per_sample = &sample<4>; break;
      case 8: per_sample = &sample<8>; break;
      case 16: per_sample = &sample<16>; break;
      case 32: per_sample = &sample<32>; break;
      case 64: per_sample = &sample<64>; break;
      case 128: per_sample = &sample<128>; break;
      default: break;
    }
    int err = 0;
#pragma omp parallel reduction(| : err)
    {
      Scratch sc(j);
#pragma omp for schedule(static)
      for (int64_t b = 0; b < batch; ++b) per_sample(j, b, sc, err);
    }
    if (err != 0) __atomic_fetch_or(a.error, err, __ATOMIC_RELAXED);
  };
}

}  // namespace luminal::custom
