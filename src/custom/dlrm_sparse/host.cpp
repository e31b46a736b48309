// DlrmSparse on the CPU: each sample's bags pooled in fp32 (the next rows prefetched, as the
// gathers are cache misses on large tables), then the pairwise dots, written straight into the
// output row. Samples are split over OpenMP's threads.
#include <algorithm>
#include <vector>

#include "custom/dlrm_sparse/op.h"
#include "custom/host_kernel_util.h"

namespace luminal::custom {

namespace {

float to_f32(uint16_t h) { return host::bf16_to_f32(h); }

// One table's pointers.
struct Table {
  const void* data;
  const float* scale_bias;  // row-wise u8 only
  const void* indices;
  const void* offsets;
  int64_t rows, nnz;
};

// Adds table row r into acc (fp32).
void add_row(const DlrmSparseShape& s, const Table& t, int64_t r, float* acc) {
  const int64_t d = s.dim;
  if (s.format == TableFormat::RowwiseU8) {
    const uint8_t* q = static_cast<const uint8_t*>(t.data) + r * d;
    const float sc = t.scale_bias[2 * r], bi = t.scale_bias[2 * r + 1];
#pragma omp simd
    for (int64_t k = 0; k < d; ++k) acc[k] += float(q[k]) * sc + bi;
  } else if (s.dtype == DType::BF16) {
    const uint16_t* q = static_cast<const uint16_t*>(t.data) + r * d;
#pragma omp simd
    for (int64_t k = 0; k < d; ++k) acc[k] += to_f32(q[k]);
  } else {
    const float* q = static_cast<const float*>(t.data) + r * d;
#pragma omp simd
    for (int64_t k = 0; k < d; ++k) acc[k] += q[k];
  }
}

// Pools sample b's bag of table t into acc; sets error bits for bad offsets / indices.
void pool(const DlrmSparseShape& s, const Table& t, int64_t b, int64_t batch, float* acc, int& err) {
  const bool i64 = s.index_dtype == DType::I64;
  const auto [lo, hi] = host::bag_range(t.offsets, i64, b, batch, t.nnz, err);
  std::fill(acc, acc + s.dim, 0.f);
  const size_t es = s.format == TableFormat::RowwiseU8 ? 1 : dtype_size(s.dtype);
  host::for_each_bag_row(t.data, size_t(s.dim) * es, t.rows, t.indices, i64, lo, hi, err,
                         [&](int64_t r) { add_row(s, t, r, acc); });
  if (s.mode == nn::BagMode::Mean && hi > lo)
    for (int64_t k = 0; k < s.dim; ++k) acc[k] /= float(hi - lo);
  if (s.dtype == DType::BF16)  // a bf16 model's bags are bf16
    for (int64_t k = 0; k < s.dim; ++k) acc[k] = to_f32(host::f32_to_bf16(acc[k]));
}

void store(DType dt, void* out, int64_t i, float v) {
  if (dt == DType::BF16) {
    static_cast<uint16_t*>(out)[i] = host::f32_to_bf16(v);
  } else {
    static_cast<float*>(out)[i] = v;
  }
}

}  // namespace

std::optional<HostKernel> DlrmSparse::host_kernel(const KernelRequest& request) const {
  const DlrmSparseShape s = shape_;
  if (s.bags_only || request.dims.empty() || request.dims[0].size() != 2) return std::nullopt;
  const int64_t batch = request.dims[0][0];
  return [s, batch](const HostKernelArgs& a) {
    const int64_t d = s.dim, n = s.tables() + 1, per = s.inputs_per_table();
    const bool u8 = s.format == TableFormat::RowwiseU8;
    std::vector<Table> tables;
    for (int64_t t = 0; t < s.tables(); ++t) {
      const size_t base = 1 + size_t(t * per);
      tables.push_back({a.inputs[base], u8 ? static_cast<const float*>(a.inputs[base + 1]) : nullptr,
                        a.inputs[base + (u8 ? 2 : 1)], a.inputs[base + (u8 ? 3 : 2)],
                        s.rows[size_t(t)], a.counts[base + (u8 ? 2 : 1)]});
    }
    int err = 0;
#pragma omp parallel reduction(| : err)
    {
      std::vector<float> feats(size_t(n * d));  // [x, bag_0, ..., bag_{k-1}] of one sample
#pragma omp for schedule(static)
      for (int64_t b = 0; b < batch; ++b) {
        float* T = feats.data();
        for (int64_t k = 0; k < d; ++k)
          T[k] = s.dtype == DType::BF16 ? to_f32(static_cast<const uint16_t*>(a.inputs[0])[b * d + k])
                                        : static_cast<const float*>(a.inputs[0])[b * d + k];
        for (int64_t t = 0; t < s.tables(); ++t) pool(s, tables[size_t(t)], b, batch, T + (t + 1) * d, err);
        const int64_t row = b * s.padded_width();
        for (int64_t k = 0; k < d; ++k) store(s.dtype, a.output, row + k, T[k]);
        int64_t col = d;
        for (int64_t i = 1; i < n; ++i) {
          for (int64_t j = 0; j < i; ++j) {
            float dot = 0.f;
            const float *ti = T + i * d, *tj = T + j * d;
#pragma omp simd reduction(+ : dot)  // vectorized (the sum order differs from a serial loop)
            for (int64_t k = 0; k < d; ++k) dot += ti[k] * tj[k];
            store(s.dtype, a.output, row + col++, dot);
          }
        }
        for (; col < s.padded_width(); ++col) store(s.dtype, a.output, row + col, 0.f);
      }
    }
    if (err != 0) __atomic_fetch_or(a.error, err, __ATOMIC_RELAXED);
  };
}

}  // namespace luminal::custom
