// EmbeddingBag on the CPU: a bag per work item, rows summed in fp32 with the next rows prefetched,
// bags split over OpenMP's threads (the decomposition's mask [B, nnz] @ rows costs B x nnz).
#include <algorithm>
#include <cstring>
#include <vector>

#include "custom/embedding_bag/op.h"

namespace luminal::custom {

namespace {

// bf16 <-> f32 inline (dtype.h's are out of line: a call per element cost 4x here).
inline float bf16_to_f32_fast(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
inline uint16_t f32_to_bf16_fast(float f) {  // round to nearest even; NaN stays NaN
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}

constexpr int kPrefetch = 4;  // rows ahead

int64_t index_at(const void* p, bool i64, int64_t j) {
  return i64 ? static_cast<const int64_t*>(p)[j] : static_cast<const int32_t*>(p)[j];
}

float load(DType dt, const void* p, int64_t i) {
  switch (dt) {
    case DType::BF16: return bf16_to_f32_fast(static_cast<const uint16_t*>(p)[i]);
    case DType::F16: return f16_bits_to_f32(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

void store(DType dt, void* p, int64_t i, float v) {
  switch (dt) {
    case DType::BF16: static_cast<uint16_t*>(p)[i] = f32_to_bf16_fast(v); return;
    case DType::F16: static_cast<uint16_t*>(p)[i] = f32_to_f16_bits(v); return;
    default: static_cast<float*>(p)[i] = v;
  }
}

}  // namespace

std::optional<HostKernel> EmbeddingBag::host_kernel(const KernelRequest& request) const {
  if (request.dims.size() != 3 || request.dims[0].size() != 2 || request.dims[2].size() != 1)
    return std::nullopt;
  const int64_t rows = request.dims[0][0], d = request.dims[0][1], batch = request.dims[2][0];
  const DType dt = request.dtypes[0];
  const bool i64 = request.dtypes[1] == DType::I64, mean = mode_ == nn::BagMode::Mean;
  return [=](const HostKernelArgs& a) {
    const void* table = a.inputs[0];
    const int64_t nnz = a.counts[1];
    const size_t row_bytes = size_t(d) * dtype_size(dt);
    int err = 0;
#pragma omp parallel reduction(| : err) if (batch * d > (1 << 14))
    {
      std::vector<float> acc(static_cast<size_t>(d), 0.f);
#pragma omp for schedule(static)
      for (int64_t b = 0; b < batch; ++b) {
        int64_t lo = index_at(a.inputs[2], i64, b);
        int64_t hi = b + 1 < batch ? index_at(a.inputs[2], i64, b + 1) : nnz;
        if (lo < 0 || hi > nnz || lo > hi) {  // offsets negative, past nnz or decreasing
          err |= 4;
          lo = std::clamp<int64_t>(lo, 0, nnz);
          hi = std::clamp<int64_t>(hi, lo, nnz);
        }
        std::fill(acc.begin(), acc.end(), 0.f);
        for (int64_t j = lo; j < hi; ++j) {
          if (j + kPrefetch < hi) {
            const int64_t ahead = index_at(a.inputs[1], i64, j + kPrefetch);
            if (ahead >= 0 && ahead < rows)
              for (size_t o = 0; o < row_bytes; o += 64)
                __builtin_prefetch(static_cast<const char*>(table) + size_t(ahead) * row_bytes + o);
          }
          int64_t r = index_at(a.inputs[1], i64, j);
          if (r < 0 || r >= rows) {
            err |= 1;
            r = r < 0 || rows <= 0 ? 0 : rows - 1;
          }
          for (int64_t k = 0; k < d; ++k) acc[size_t(k)] += load(dt, table, r * d + k);
        }
        const float n = mean && hi > lo ? float(hi - lo) : 1.f;  // one rounding of sum / count
        for (int64_t k = 0; k < d; ++k) store(dt, a.output, b * d + k, acc[size_t(k)] / n);
      }
    }
    if (err != 0) __atomic_fetch_or(a.error, err, __ATOMIC_RELAXED);
  };
}

}  // namespace luminal::custom
