// CrossGemm's CUDA source generator: one kernel per (n, k, dtype) over cross_gemm.cuh; the batch
// only sizes the grid (M is u's element count / k at each execute).
#include <string>

#include <fmt/format.h>

#include "custom/cross_gemm/op.h"
#include "custom/kernel_name.h"

namespace luminal::custom {

namespace {

// Mirrors cross_gemm.cuh's tile and block (the kernel's launch bounds).
constexpr int64_t kTileM = 128, kTileN = 128, kThreads = 256, kSharedBytes = 4 * 2 * 128 * 32 * 2;
constexpr int64_t kMaxGridY = 65535;

}  // namespace

CustomKernel emit_cross_gemm(const CrossGemmShape& s, int64_t m) {
  s.validate();
  const bool f16 = s.dtype == DType::F16;
  const std::string desc = fmt::format("n {}, k {}, {}", s.n, s.k, dtype_name(s.dtype));
  CustomKernel k;
  k.entry = fmt::format("cross_gemm_{:016x}", fnv1a(desc));
  k.block = {unsigned(kThreads), 1, 1};
  k.grid = {unsigned((s.n + kTileN - 1) / kTileN), unsigned((std::max<int64_t>(m, 1) + kTileM - 1) / kTileM), 1};
  k.shared_bytes = unsigned(kSharedBytes);
  k.source = fmt::format(
      "// cross_gemm: out = x0 * (u W^T + b) + xl (src/custom/cross_gemm/emit.cpp); {}.\n"
      "#include \"cross_gemm.cuh\"\n\n"
      "extern \"C\" __global__ void __launch_bounds__({}, 2) {}(\n"
      "    const void* u, const void* w, const void* b, const void* x0, const void* xl, void* out, int* error,\n"
      "    long long n_u) {{\n"
      "  (void)error;\n"
      "  cross_gemm::run<{}, {}, {}>(static_cast<const unsigned short*>(u), static_cast<const unsigned short*>(w),\n"
      "      static_cast<const unsigned short*>(b), static_cast<const unsigned short*>(x0),\n"
      "      static_cast<const unsigned short*>(xl), static_cast<unsigned short*>(out), n_u / {});\n"
      "}}\n",
      desc, kThreads, k.entry, f16 ? "true" : "false", s.n, s.k, s.k);
  return k;
}

std::optional<CustomKernel> CrossGemm::cuda_kernel(const KernelRequest& request) const {
  if (shape_.dtype == DType::F32 || request.device.cc_major < 8 || shape_.n % 8 != 0 || shape_.k % 8 != 0)
    return std::nullopt;
  if (request.dims.size() != 5 || request.dims[0].size() != 2 || request.device.shared_per_block < size_t(kSharedBytes))
    return std::nullopt;
  for (DType dt : request.dtypes)
    if (dt != shape_.dtype) return std::nullopt;
  const int64_t m = request.dims[0][0];
  if (m < 1 || (m + kTileM - 1) / kTileM > kMaxGridY) return std::nullopt;
  return emit_cross_gemm(shape_, m);
}

}  // namespace luminal::custom
