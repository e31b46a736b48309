#include "cpu/host_int8_matmul.h"

#include <algorithm>
#include <cmath>

#include "cpu/onednn.h"
#include "custom/host_kernel_util.h"

namespace luminal::cpu {

namespace {

inline float load(DType dt, const std::byte* p, int64_t i) {
  return dt == DType::BF16 ? custom::host::bf16_to_f32(reinterpret_cast<const uint16_t*>(p)[i])
                           : reinterpret_cast<const float*>(p)[i];
}

// Symmetric s8 of v at 1 / scale (round to nearest even, clamped to +-127).
[[gnu::always_inline]] inline int8_t quantize(float v, float inv_scale) {
  // rint (the default rounding mode: to nearest even) vectorizes where roundeven does not (GCC 12).
  const float r = __builtin_rintf(v * inv_scale);
  return int8_t(int(std::min(127.f, std::max(-127.f, r))));
}

// The row helpers below are compiled per ISA (the library is built for baseline x86-64) and kept
// free of dtype branches per element, so each loop vectorizes: 7M activations per call at
// DLRM-v2's widths.

// Largest |v| of a row of n bf16 (bf16) or f32 values; `finite` cleared by a NaN or infinity.
LUMINAL_HOST_CLONES float row_abs_max(bool bf16, const void* row, int64_t n, int& finite) {
  float amax = 0, sum = 0;
  if (bf16) {
    const auto* h = static_cast<const uint16_t*>(row);
#pragma omp simd reduction(max : amax) reduction(+ : sum)
    for (int64_t q = 0; q < n; ++q) {
      const float v = custom::host::bf16_to_f32(h[q]);
      amax = std::max(amax, std::abs(v));
      sum += v * 0.f;  // NaN or infinity make it NaN
    }
  } else {
    const auto* f = static_cast<const float*>(row);
#pragma omp simd reduction(max : amax) reduction(+ : sum)
    for (int64_t q = 0; q < n; ++q) {
      amax = std::max(amax, std::abs(f[q]));
      sum += f[q] * 0.f;
    }
  }
  if (sum != 0) finite = 0;  // NaN != 0
  return amax;
}

// out[q] = quantize(row[q]) for q < n.
LUMINAL_HOST_CLONES void quantize_row(bool bf16, const void* row, int64_t n, float inv_scale, int8_t* out) {
  if (bf16) {
    const auto* h = static_cast<const uint16_t*>(row);
#pragma omp simd
    for (int64_t q = 0; q < n; ++q) out[q] = quantize(custom::host::bf16_to_f32(h[q]), inv_scale);
  } else {
    const auto* f = static_cast<const float*>(row);
#pragma omp simd
    for (int64_t q = 0; q < n; ++q) out[q] = quantize(f[q], inv_scale);
  }
}

}  // namespace

bool Int8Weights::update(DType dt, const std::byte* w, int64_t b_row, int64_t b_col, int64_t n, int64_t k,
                         uint64_t version) {
  if (version != 0 && version == version_ && w == data_ && b_row == b_row_ && b_col == b_col_ && n == n_ && k == k_)
    return finite;
  q.resize(size_t(n * k));
  scale.resize(size_t(n));
  int bad = 0;
#pragma omp parallel for reduction(| : bad) if (n * k > (1 << 16))
  for (int64_t j = 0; j < n; ++j) {
    float amax = 0;
    for (int64_t kk = 0; kk < k; ++kk) {
      const float v = load(dt, w, kk * b_row + j * b_col);
      bad |= !std::isfinite(v);
      amax = std::max(amax, std::abs(v));
    }
    const float sj = amax > 0 ? amax / 127.f : 1.f;
    scale[size_t(j)] = sj;
    for (int64_t kk = 0; kk < k; ++kk) q[size_t(j * k + kk)] = quantize(load(dt, w, kk * b_row + j * b_col), 1.f / sj);
  }
  finite = bad == 0;
  generation = next_input_version();
  data_ = w, b_row_ = b_row, b_col_ = b_col, n_ = n, k_ = k, version_ = version;
  return finite;
}

std::unique_ptr<Int8Matmul> Int8Matmul::make(int64_t m, int64_t n, int64_t k, DType dt, bool bias, bool relu,
                                             const Int8Weights* weights, WeightPacks* packs) {
  const auto out = onednn_type(dt);
  if (weights == nullptr || packs == nullptr || m < 1 || n < 1 || k < 1 || !out || dt == DType::F16) return nullptr;
  using md = dnnl::memory::desc;
  using type = dnnl::memory::data_type;
  std::unique_ptr<Int8Matmul> g(new Int8Matmul());
  g->m_ = m, g->n_ = n, g->k_ = k, g->dt_ = dt, g->bias_ = bias, g->weights_ = weights, g->packs_ = packs;
  try {
    const md src({m, k}, type::s8, dnnl::memory::dims{k, 1}), dst({m, n}, *out, dnnl::memory::dims{n, 1});
    const md col({1, n}, type::f32, dnnl::memory::dims{n, 1});
    // The scales as a binary post-op, not output scales: oneDNN 2.6 leaves its AMX / VNNI kernels
    // for runtime output scales, not for binary post-ops. The bias is added after them (a matmul
    // bias would be added to the integer accumulator).
    dnnl::post_ops ops;
    ops.append_binary(dnnl::algorithm::binary_mul, col);
    if (bias) ops.append_binary(dnnl::algorithm::binary_add, col);
    if (relu) ops.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    const dnnl::matmul::primitive_desc pd(
        dnnl::matmul::desc(src, md({k, n}, type::s8, dnnl::memory::format_tag::any), dst), attr, onednn_engine());
    const std::string impl = pd.impl_info_str();
    if (impl.find("brg") == std::string::npos) return nullptr;  // gemm:jit / ref: slower than bf16
    g->wei_plain_ = md({k, n}, type::s8, dnnl::memory::dims{1, k});
    g->wei_packed_ = pd.weights_desc();
    if (!packs->reserve(weights, g->wei_packed_)) return nullptr;
    g->prim_ = dnnl::matmul(pd);
    g->src_ = dnnl::memory(src, onednn_engine(), nullptr);
    g->dst_ = dnnl::memory(dst, onednn_engine(), nullptr);
    g->col_scale_mem_ = dnnl::memory(col, onednn_engine(), nullptr);
    g->col_bias_mem_ = dnnl::memory(col, onednn_engine(), nullptr);
    g->args_ = {{DNNL_ARG_SRC, g->src_},
                {DNNL_ARG_DST, g->dst_},
                {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, g->col_scale_mem_}};
    if (bias) g->args_.emplace(DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, g->col_bias_mem_);
    g->impl_ = "onednn " + impl + " (int8: weights per column, activations per tensor)";
  } catch (const dnnl::error&) {
    return nullptr;
  }
  g->a8_.resize(size_t(m * k));
  g->col_scale_.resize(size_t(n));
  g->col_bias_.resize(size_t(n));
  return g;
}

Int8Matmul::~Int8Matmul() {
  if (packs_ != nullptr && !impl_.empty()) packs_->release(weights_, wei_packed_);
}

bool Int8Matmul::run(const std::byte* a, int64_t a_row, std::byte* c, const std::byte* bias, DType bias_dt) {
  const Int8Weights& w = *weights_;
  args_[DNNL_ARG_WEIGHTS] = packs_->get(weights_, reinterpret_cast<const std::byte*>(w.q.data()), w.generation,
                                        wei_plain_, wei_packed_);
  // The activations' scale: their largest magnitude maps to 127 (one scale for the tensor: a scale
  // per row would be a per-row post-op, which oneDNN 2.6 runs only in its reference kernel).
  const int64_t m = m_, k = k_;
  const bool bf16 = dt_ == DType::BF16;
  const size_t es = dtype_size(dt_);
  float amax = 0;
  int finite = 1;
#pragma omp parallel for reduction(max : amax) reduction(min : finite) if (m * k > (1 << 16))
  for (int64_t i = 0; i < m; ++i) {
    int row_finite = 1;
    amax = std::max(amax, row_abs_max(bf16, a + i * a_row * int64_t(es), k, row_finite));
    finite = std::min(finite, row_finite);
  }
  if (finite == 0) return false;
  const float a_scale = amax > 0 ? amax / 127.f : 1.f;
#pragma omp parallel for if (m * k > (1 << 16))
  for (int64_t i = 0; i < m; ++i) quantize_row(bf16, a + i * a_row * int64_t(es), k, 1.f / a_scale, &a8_[size_t(i * k)]);
  for (int64_t j = 0; j < n_; ++j) {
    col_scale_[size_t(j)] = a_scale * w.scale[size_t(j)];
    if (bias_) col_bias_[size_t(j)] = load(bias_dt, bias, j);
  }
  src_.set_data_handle(a8_.data());
  dst_.set_data_handle(c);
  col_scale_mem_.set_data_handle(col_scale_.data());
  col_bias_mem_.set_data_handle(col_bias_.data());
  dnnl::stream& stream = onednn_stream();
  prim_.execute(stream, args_);
  stream.wait();
  return true;
}

}  // namespace luminal::cpu
