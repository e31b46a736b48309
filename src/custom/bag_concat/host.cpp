// BagConcat on the CPU: per sample, x and every table's pooled bag written into the output row in
// fp32, then rounded; rows prefetched a few samples ahead; samples split over OpenMP's threads.
#include <algorithm>
#include <vector>

#include "custom/bag_concat/op.h"
#include "custom/host_kernel_util.h"

namespace luminal::custom {

namespace {

// One call's inputs and output; scale_bias[t] is table t's [rows, 2] f32 with RowwiseU8 tables.
struct Job {
  BagConcatShape s;
  std::vector<host::BagTable> tables;
  std::vector<const float*> scale_bias;
  const void* x;  // null without x
  void* out;
  int64_t batch, n_off;  // n_off: each table's offsets, batch (+ 1 when closed)
  bool i64, bf16;
};

[[gnu::always_inline]] inline float element(bool bf16, const void* p, int64_t i) {
  return bf16 ? host::bf16_to_f32(static_cast<const uint16_t*>(p)[i]) : static_cast<const float*>(p)[i];
}

// Sample b's row: x, then each bag (fp32 sums in acc), rounded into the output.
LUMINAL_HOST_CLONES void sample(const Job& j, int64_t b, float* acc, int& err) {
  const int64_t d = j.s.dim, width = j.s.out_width();
  if (b + host::kPrefetchBags < j.batch)
    for (const host::BagTable& t : j.tables) host::prefetch_bag(t, j.i64, b + host::kPrefetchBags, j.n_off);
  if (j.x != nullptr)
    for (int64_t k = 0; k < d; ++k) acc[k] = element(j.bf16, j.x, b * d + k);
  for (int64_t t = 0; t < j.s.tables(); ++t) {
    const host::BagTable& tb = j.tables[size_t(t)];
    float* a = acc + (j.s.first_table_input() + t) * d;
    if (j.s.format == TableFormat::RowwiseU8) {
      const float* sb = j.scale_bias[size_t(t)];
      host::pool_bag(tb, j.i64, b, j.n_off, j.s.mode == nn::BagMode::Mean, d, a, err,
                     [&](int64_t r) { host::add_rowwise_u8(tb.data, sb, r, d, a); });
      continue;
    }
    host::pool_bag(tb, j.i64, b, j.n_off, j.s.mode == nn::BagMode::Mean, d, a, err, [&](int64_t r) {
#pragma omp simd
      for (int64_t k = 0; k < d; ++k) a[k] += element(j.bf16, tb.data, r * d + k);
    });
  }
  if (j.bf16) {
    uint16_t* o = static_cast<uint16_t*>(j.out) + b * width;
#pragma omp simd
    for (int64_t k = 0; k < width; ++k) o[k] = host::f32_to_bf16(acc[k]);
  } else {
    std::copy(acc, acc + width, static_cast<float*>(j.out) + b * width);
  }
}

}  // namespace

std::optional<HostKernel> BagConcat::host_kernel(const KernelRequest& request) const {
  const BagConcatShape s = shape_;
  const size_t per = size_t(s.inputs_per_table()), first = size_t(s.first_table_input());
  const std::optional<int64_t> b = s.batch_of(request.dims);
  if (!b) return std::nullopt;
  const int64_t batch = *b;
  return [s, batch, per, first](const HostKernelArgs& a) {
    Job j{s, {}, {}, s.with_x ? a.inputs[0] : nullptr, a.output, batch, batch + (s.closed ? 1 : 0),
          s.index_dtype == DType::I64, s.dtype == DType::BF16};
    const bool u8 = s.format == TableFormat::RowwiseU8;
    const size_t row_bytes = size_t(s.dim) * (u8 ? 1 : dtype_size(s.dtype));
    for (int64_t t = 0; t < s.tables(); ++t) {
      const size_t base = first + per * size_t(t), idx = base + per - 2;  // indices, then offsets, end the table's inputs
      j.tables.push_back({a.inputs[base], a.inputs[idx], a.inputs[idx + 1], s.rows[size_t(t)], a.counts[idx], row_bytes});
      j.scale_bias.push_back(u8 ? static_cast<const float*>(a.inputs[base + 1]) : nullptr);
    }
    int err = 0;
#pragma omp parallel reduction(| : err)
    {
      std::vector<float> acc(static_cast<size_t>(s.out_width()));
#pragma omp for schedule(static)
      for (int64_t b = 0; b < batch; ++b) sample(j, b, acc.data(), err);
    }
    if (err != 0) __atomic_fetch_or(a.error, err, __ATOMIC_RELAXED);
  };
}

}  // namespace luminal::custom
