// The GEMV kernel's source and its launch for a matmul step.
#include "cuda/runtime/gemv.h"

#include <stdexcept>

#include <fmt/format.h>

namespace luminal::cuda {
namespace {

const char* gemv_type(DType dt) {
  switch (dt) {
    case DType::F32: return "LumGemvF32";
    case DType::F16: return "LumGemvF16";
    case DType::BF16: return "LumGemvBf16";
    default:
      throw std::invalid_argument(fmt::format("[cuda] no GEMV kernel for {}", dtype_name(dt)));
  }
}

}  // namespace

std::string gemv_entry(DType dt) {
  gemv_type(dt);  // refuses other dtypes
  return fmt::format("luminal_gemv_{}", dtype_name(dt));
}

std::string gemv_source(DType dt) {
  return fmt::format(R"(#include "gemv.cuh"
extern "C" __global__ void __launch_bounds__({block}) {entry}(
    const {type}::Storage* a, const {type}::Storage* b, {type}::Storage* c,
    const {type}::Storage* bias, long long m, long long n, long long k, long long lda,
    long long ldb, long long a_batch, long long b_batch, long long relu) {{
  lum_gemv<{type}>(a, b, c, bias, m, n, k, lda, ldb, a_batch, b_batch, relu);
}}
)",
                     fmt::arg("block", kGemvBlock), fmt::arg("entry", gemv_entry(dt)),
                     fmt::arg("type", gemv_type(dt)));
}

std::optional<Launch> gemv_launch(const compiler::MatmulStep& st, CUfunction fn,
                                  const StepContext& c) {
  if (st.gemv_max_m <= 0 || fn == nullptr) return std::nullopt;
  const int64_t m = st.m.eval(c.dyn), n = st.n.eval(c.dyn), k = st.k.eval(c.dyn);
  const int64_t batch = st.batch.eval(c.dyn);
  if (m < 1 || m > st.gemv_max_m || n < 1 || k < 1 || batch < 1 || batch > 65535) return std::nullopt;
  // A [m, k] and B [k, n] must both run along k contiguously: B is then a [n, k] weight.
  if (st.a_col.eval(c.dyn) != 1 || st.b_row.eval(c.dyn) != 1) return std::nullopt;
  const int64_t lda = st.a_row.eval(c.dyn), ldb = st.b_col.eval(c.dyn);
  const int64_t a_batch = st.a_batch.eval(c.dyn), b_batch = st.b_batch.eval(c.dyn);
  const int64_t es = int64_t(dtype_size(st.dtype)), vec = 16 / es;
  const CUdeviceptr a = c.ptrs[size_t(st.a)] + CUdeviceptr(st.a_offset.eval(c.dyn) * es);
  const CUdeviceptr b = c.ptrs[size_t(st.b)] + CUdeviceptr(st.b_offset.eval(c.dyn) * es);
  const CUdeviceptr bias = st.bias >= 0 ? c.ptrs[size_t(st.bias)] : 0;
  // 16-byte vector loads: every row start of A and B must be 16-byte aligned.
  for (int64_t v : {k, m > 1 ? lda : vec, n > 1 ? ldb : vec, batch > 1 ? a_batch : vec,
                    batch > 1 ? b_batch : vec})
    if (v % vec != 0) return std::nullopt;
  if (a % 16 != 0 || b % 16 != 0) return std::nullopt;
  const int64_t cols_per_block = kGemvBlock / 32;
  Launch l;
  l.fn = fn;
  l.grid[0] = unsigned((n + cols_per_block - 1) / cols_per_block);
  l.grid[1] = unsigned(batch);
  l.block[0] = kGemvBlock;
  for (int64_t v : {int64_t(a), int64_t(b), int64_t(c.ptrs[size_t(st.c)]), int64_t(bias), m, n, k,
                    lda, ldb, a_batch, b_batch, int64_t(st.relu)})
    l.values.push_back(static_cast<unsigned long long>(v));
  return l;
}

}  // namespace luminal::cuda
