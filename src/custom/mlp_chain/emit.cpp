// MlpChain's CUDA source generator: one kernel per (layer widths, biases, epilogues, dtype, tile rows) over
// mlp_chain.cuh; the batch only sizes the grid and the workspace (the kernel derives M and its
// workspace layout from x's element count, so one compiled kernel serves every batch).
#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "custom/kernel_name.h"
#include "custom/mlp_chain/op.h"

namespace luminal::custom {

namespace {

constexpr int64_t kTileN = 64, kThreads = 128, kBlocksPerSm = 3;  // 3: up to 168 registers a thread
// mlp_chain.cuh's shared_bytes<BM, L>(): 4 stages of (BM + 64) rows of k 32, the ticket, then a
// 40-byte mlp_chain::Layer per layer.
int64_t shared_bytes(int64_t tile_m, size_t layers) { return 4 * (tile_m + kTileN) * 64 + 16 + 40 * int64_t(layers); }

// A layer's k slices where it has too few tiles: slices of 512 or more (16 k-tiles: enough work
// to amortize the partial sums' round trip through L2), at most 8, none below k 1024.
struct Split {
  int64_t slices = 1, slice_k = 0;
};
Split split_of(int64_t k) {
  if (k < 1024) return {1, (k + 31) / 32 * 32};
  const int64_t want = std::min<int64_t>(8, k / 512), slice_k = (k / want + 31) / 32 * 32;
  return {(k + slice_k - 1) / slice_k, slice_k};
}
int64_t col_blocks(int64_t n) { return (n + kTileN - 1) / kTileN; }
int64_t round256(int64_t bytes) { return (bytes + 255) / 256 * 256; }
// The widest intermediate layer (0 for one layer: nothing kept between layers).
int64_t widest_hidden(const MlpChainShape& s) {
  int64_t w = 0;
  for (size_t l = 0; l + 1 < s.widths.size(); ++l) w = std::max(w, s.widths[l]);
  return w;
}

}  // namespace

CustomKernel emit_mlp_chain(const MlpChainShape& s, int64_t m, int sm_count) {
  s.validate();
  if (m > kMlpChainMaxRows)
    throw std::invalid_argument(fmt::format("[mlp_chain] {} rows, the kernel takes at most {}", m, kMlpChainMaxRows));
  const int64_t layers = int64_t(s.widths.size()), row_blocks = (std::max<int64_t>(m, 1) + s.tile_m - 1) / s.tile_m;
  const int64_t row_cap = kMlpChainMaxRows / s.tile_m;
  static constexpr const char* kEpilogue[] = {"", "+relu", "+cross"};
  std::string desc = fmt::format("k {}, layers", s.k);
  for (size_t l = 0; l < s.widths.size(); ++l)
    desc += fmt::format(" {}{}{}", s.widths[l], s.has_bias(l) ? "" : " (no bias)", kEpilogue[int(s.epilogue[l])]);
  desc += fmt::format(", {}, {}-row tiles", dtype_name(s.dtype), s.tile_m);
  CustomKernel k;
  k.entry = fmt::format("mlp_chain_{:016x}", fnv1a(desc));
  k.block = {unsigned(kThreads), 1, 1};
  // Layers of fewer tiles than two waves of the GPU split their k (mlp_chain.cuh's slices()).
  const int64_t split_below = 2 * std::max(sm_count, 1);
  int64_t tiles = 0, counters = 2 + layers * row_cap, part_stride = 0;
  for (size_t l = 0; l < s.widths.size(); ++l) {
    const Split sp = split_of(s.in_width(l));
    const int64_t layer_tiles = row_blocks * col_blocks(s.widths[l]), slices = layer_tiles < split_below ? sp.slices : 1;
    tiles += layer_tiles * slices;
    if (sp.slices > 1) counters += row_cap * col_blocks(s.widths[l]);
    if (slices > 1) part_stride = std::max(part_stride, slices * s.widths[l]);
  }
  k.grid = {unsigned(std::clamp<int64_t>(tiles, 1, kBlocksPerSm * std::max(sm_count, 1))), 1, 1};
  k.shared_bytes = unsigned(shared_bytes(s.tile_m, s.widths.size()));
  // The counters, two activation buffers, then the split layers' fp32 partial sums.
  const int64_t act_offset = round256(counters * 4);
  k.workspace_bytes = size_t(act_offset + 2 * round256(m * widest_hidden(s) * 2) + m * part_stride * 4);

  std::string params = "const void* x", counts = "long long n_x", table;
  for (size_t l = 0; l < s.widths.size(); ++l) {
    const bool bias = s.has_bias(l);
    params += fmt::format(", const void* w{0}{1}", l, bias ? fmt::format(", const void* b{}", l) : "");
    counts += fmt::format(", long long n_w{0}{1}", l, bias ? fmt::format(", long long n_b{}", l) : "");
    const Split sp = split_of(s.in_width(l));
    table += fmt::format("      {{static_cast<const unsigned short*>(w{}), {}, {}, {}, {}, {}, {}}},\n", l,
                         bias ? fmt::format("static_cast<const unsigned short*>(b{})", l) : "nullptr", s.widths[l],
                         s.in_width(l), int(s.epilogue[l]), sp.slices, sp.slice_k);
  }
  k.source = fmt::format(
      "// mlp_chain: y_l = act(y_(l-1) W_l^T + b_l) in one launch (src/custom/mlp_chain/emit.cpp); {}.\n"
      "#include \"mlp_chain.cuh\"\n\n"
      "extern \"C\" __global__ void __launch_bounds__({}, {}) {}(\n"
      "    {}, void* out, int* error,\n    {}, void* workspace) {{\n"
      "  (void)error;\n"
      "  const long long m = n_x / {};\n"
      "  const mlp_chain::Layer layers[{}] = {{\n{}  }};\n"
      "  mlp_chain::run<{}, {}, {}>(static_cast<const unsigned short*>(x), static_cast<unsigned short*>(out), layers, m,\n"
      "      workspace, {}, {}, {}, {});\n"
      "}}\n",
      desc, kThreads, kBlocksPerSm, k.entry, params, counts, s.k, layers, table,
      s.dtype == DType::F16 ? "true" : "false", s.tile_m, layers, row_cap, act_offset, widest_hidden(s), split_below);
  return k;
}

std::optional<CustomKernel> MlpChain::cuda_kernel(const KernelRequest& request) const {
  if (shape_.dtype == DType::F32 || request.device.cc_major < 8 ||
      request.device.shared_per_block < size_t(shared_bytes(shape_.tile_m, shape_.widths.size())))
    return std::nullopt;
  for (size_t l = 0; l < shape_.widths.size(); ++l)
    if (shape_.in_width(l) % 8 != 0) return std::nullopt;  // 16-byte chunks of every row
  if (request.dims.size() != shape_.input_count() || request.dims[0].size() != 2) return std::nullopt;
  for (DType dt : request.dtypes)
    if (dt != shape_.dtype) return std::nullopt;
  const int64_t m = request.dims[0][0];
  if (m < 1 || m > kMlpChainMaxRows) return std::nullopt;
  return emit_mlp_chain(shape_, m, request.device.sm_count);
}

}  // namespace luminal::custom
