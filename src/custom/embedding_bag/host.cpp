// EmbeddingBag on the CPU: a bag per work item, rows summed in fp32 with the next rows prefetched,
// bags split over OpenMP's threads (the decomposition's mask [B, nnz] @ rows costs B x nnz).
#include <algorithm>
#include <vector>

#include "custom/embedding_bag/op.h"
#include "custom/host_kernel_util.h"

namespace luminal::custom {

namespace {

[[gnu::always_inline]] inline float load(DType dt, const void* p, int64_t i) {
  switch (dt) {
    case DType::BF16: return host::bf16_to_f32(static_cast<const uint16_t*>(p)[i]);
    case DType::F16: return f16_bits_to_f32(static_cast<const uint16_t*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

[[gnu::always_inline]] inline void store(DType dt, void* p, int64_t i, float v) {
  switch (dt) {
    case DType::BF16: static_cast<uint16_t*>(p)[i] = host::f32_to_bf16(v); return;
    case DType::F16: static_cast<uint16_t*>(p)[i] = f32_to_f16_bits(v); return;
    default: static_cast<float*>(p)[i] = v;
  }
}

// One call's bags.
struct Bags {
  host::BagTable t;
  const void* weights;  // per_sample_weights [nnz] in dt, or nullptr
  void* out;
  int64_t d, batch, n_off;  // n_off = batch, or batch + 1 for closed offsets
  DType dt;
  bool i64, mean;
};

// Bag b summed (or averaged) in fp32 into acc, then stored.
LUMINAL_HOST_CLONES void bag(const Bags& g, int64_t b, float* acc, int& err) {
  if (b + host::kPrefetchBags < g.batch) host::prefetch_bag(g.t, g.i64, b + host::kPrefetchBags, g.n_off);
  if (g.weights == nullptr) {
    host::pool_bag(g.t, g.i64, b, g.n_off, g.mean, g.d, acc, err, [&](int64_t r) {
      for (int64_t k = 0; k < g.d; ++k) acc[k] += load(g.dt, g.t.data, r * g.d + k);
    });
  } else {
    host::pool_bag(g.t, g.i64, b, g.n_off, g.mean, g.d, acc, err, [&](int64_t r, int64_t j) {
      const float w = load(g.dt, g.weights, j);
      for (int64_t k = 0; k < g.d; ++k) acc[k] += w * load(g.dt, g.t.data, r * g.d + k);
    });
  }
  for (int64_t k = 0; k < g.d; ++k) store(g.dt, g.out, b * g.d + k, acc[k]);
}

}  // namespace

std::optional<HostKernel> EmbeddingBag::host_kernel(const KernelRequest& request) const {
  if (request.dims.size() != (weighted_ ? 4u : 3u) || request.dims[0].size() != 2 || request.dims[2].size() != 1)
    return std::nullopt;
  const bool weighted = weighted_;
  const int64_t rows = request.dims[0][0], d = request.dims[0][1], n_off = request.dims[2][0];
  const int64_t batch = n_off - (closed_ ? 1 : 0);
  const DType dt = request.dtypes[0];
  const bool i64 = request.dtypes[1] == DType::I64, mean = mode_ == nn::BagMode::Mean;
  return [=](const HostKernelArgs& a) {
    const host::BagTable t{a.inputs[0], a.inputs[1], a.inputs[2], rows, a.counts[1], size_t(d) * dtype_size(dt)};
    const Bags g{t, weighted ? a.inputs[3] : nullptr, a.output, d, batch, n_off, dt, i64, mean};
    int err = 0;
#pragma omp parallel reduction(| : err) if (batch * d > (1 << 14))
    {
      std::vector<float> acc(static_cast<size_t>(d), 0.f);
#pragma omp for schedule(static)
      for (int64_t b = 0; b < batch; ++b) bag(g, b, acc.data(), err);
    }
    if (err != 0) __atomic_fetch_or(a.error, err, __ATOMIC_RELAXED);
  };
}

}  // namespace luminal::custom
