// CrossGemm's CUDA source generator: one kernel per (n, k, dtype, core) over cross_gemm.cuh (mma.sync,
// sm_80 on) or cross_gemm_sm90.cuh (wgmma, sm_90a only); the batch only sizes the grid (M is u's
// element count / k at each execute).
#include <string>

#include <fmt/format.h>

#include "custom/cross_gemm/op.h"
#include "custom/kernel_name.h"

namespace luminal::custom {

namespace {

// Mirrors the kernels' tile and block (their launch bounds): 128 x 128 tiles of 256 threads, or with
// wgmma and tile_m 64, 64 x 128 tiles of 128 threads.
constexpr int64_t kTileN = 128;
constexpr int64_t kSharedBytes = 4 * 2 * 128 * 32 * 2;              // cross_gemm.cuh: 4 stages of k 32
// cross_gemm_sm90.cuh: `stages` of k 64 (u's tile_m and W's 128 rows) + alignment slack.
constexpr int64_t shared_bytes_sm90(int stages, int64_t tile_m) { return stages * (tile_m + 128) * 64 * 2 + 1024; }
// Rows per block: the shape's with the wgmma core, 128 with mma.sync.
int64_t tile_rows(const CrossGemmShape& s, bool wgmma) { return wgmma ? s.tile_m : 128; }
constexpr int64_t kMaxGridY = 65535;

}  // namespace

CustomKernel emit_cross_gemm(const CrossGemmShape& s, int64_t m, bool wgmma) {
  s.validate();
  const bool f16 = s.dtype == DType::F16;
  const std::string desc =
      fmt::format("n {}, k {}, {}{}", s.n, s.k, dtype_name(s.dtype),
                  wgmma ? fmt::format(", wgmma {} stages{}{}", s.stages, s.overlap ? " overlapped" : "",
                                      s.tile_m == 128 ? "" : fmt::format(", {}-row tiles", s.tile_m))
                        : "");
  CustomKernel k;
  k.entry = fmt::format("cross_gemm_{:016x}", fnv1a(desc));
  const int64_t tm = tile_rows(s, wgmma), threads = 2 * tm;
  k.block = {unsigned(threads), 1, 1};
  k.grid = {unsigned((s.n + kTileN - 1) / kTileN), unsigned((std::max<int64_t>(m, 1) + tm - 1) / tm), 1};
  k.shared_bytes = unsigned(wgmma ? shared_bytes_sm90(s.stages, tm) : kSharedBytes);
  // 228 KiB of shared memory per SM: 128-row tiles 97 / 129 KiB (3 / 4 stages), 64-row 73 / 97 KiB.
  const int blocks_per_sm = wgmma ? int(228 * 1024 / k.shared_bytes) : 2;
  const char* header = wgmma ? "cross_gemm_sm90" : "cross_gemm";
  k.source = fmt::format(
      "// cross_gemm: out = x0 * (u W^T + b) + xl (src/custom/cross_gemm/emit.cpp); {}.\n"
      "#include \"{}.cuh\"\n\n"
      "extern \"C\" __global__ void __launch_bounds__({}, {}) {}(\n"
      "    const void* u, const void* w, const void* b, const void* x0, const void* xl, void* out, int* error,\n"
      "    long long n_u) {{\n"
      "  (void)error;\n"
      "  {}::run<{}, {}, {}{}>(static_cast<const unsigned short*>(u), static_cast<const unsigned short*>(w),\n"
      "      static_cast<const unsigned short*>(b), static_cast<const unsigned short*>(x0),\n"
      "      static_cast<const unsigned short*>(xl), static_cast<unsigned short*>(out), n_u / {});\n"
      "}}\n",
      desc, header, threads, blocks_per_sm, k.entry, header, f16 ? "true" : "false", s.n, s.k,
      wgmma ? fmt::format(", {}, {}, {}", s.stages, s.overlap ? "true" : "false", tm) : "", s.k);
  return k;
}

std::optional<CustomKernel> CrossGemm::cuda_kernel(const KernelRequest& request) const {
  if (shape_.dtype == DType::F32 || request.device.cc_major < 8 || shape_.n % 8 != 0 || shape_.k % 8 != 0)
    return std::nullopt;
  // Hopper (exactly 9.0: wgmma is an sm_90a feature, which NVRTC targets there) gets the wgmma core.
  const bool wgmma = shape_.wgmma && request.device.cc_major == 9 && request.device.cc_minor == 0;
  const int64_t tm = tile_rows(shape_, wgmma);
  if (request.dims.size() != 5 || request.dims[0].size() != 2 ||
      request.device.shared_per_block < size_t(wgmma ? shared_bytes_sm90(shape_.stages, tm) : kSharedBytes))
    return std::nullopt;
  for (DType dt : request.dtypes)
    if (dt != shape_.dtype) return std::nullopt;
  const int64_t m = request.dims[0][0];
  if (m < 1 || (m + tm - 1) / tm > kMaxGridY) return std::nullopt;
  return emit_cross_gemm(shape_, m, wgmma);
}

}  // namespace luminal::custom
