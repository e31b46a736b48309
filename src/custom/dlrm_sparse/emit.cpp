// DlrmSparse's CUDA source generator: one kernel per (d, tables, format, dtypes, mode) over
// the device templates in dlrm_sparse.cuh. Neither nnz_t nor the batch is in the source: the kernel
// reads the indices' and offsets' element counts from the trailing numel parameters (custom_op.h),
// so a new nnz or batch reuses the compiled kernel.
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "custom/dlrm_sparse/op.h"
#include "custom/kernel_name.h"

namespace luminal::custom {

namespace {

// Floats of a warp's bag spans (3 i64 per table), rounded to 16 bytes (T's float4 reads).
int64_t span_floats(const DlrmSparseShape& s) { return (6 * s.tables() + 3) / 4 * 4; }

constexpr int64_t kMaxSharedBytes = 200 * 1024;  // below sm_90's 227 KB opt-in limit

// Per-table parameter names in input order.
std::vector<std::string> table_params(const DlrmSparseShape& s, int64_t t) {
  if (s.format == TableFormat::RowwiseU8)
    return {fmt::format("table_{}", t), fmt::format("scale_bias_{}", t),
            fmt::format("indices_{}", t), fmt::format("offsets_{}", t)};
  return {fmt::format("table_{}", t), fmt::format("indices_{}", t), fmt::format("offsets_{}", t)};
}

// Inputs, output, error word, then one element count per input (custom_op.h).
std::string params(const DlrmSparseShape& s) {
  std::vector<std::string> names;
  if (!s.bags_only) names.push_back("x");
  for (int64_t t = 0; t < s.tables(); ++t)
    for (std::string& n : table_params(s, t)) names.push_back(std::move(n));
  std::string p, counts;
  for (const std::string& n : names) p += fmt::format("    const void* {}_,\n", n);
  for (size_t i = 0; i < names.size(); ++i)
    counts += fmt::format("{}long long n_{}", i % 4 ? ", " : (i ? ",\n    " : "    "), names[i]);
  return p + "    void* out_, int* error,\n" + counts;
}

// args[t] = {table, scale/bias, indices, offsets, nnz, rows}, written by thread t (one thread
// writing them all makes ptxas load every parameter up front and spill).
std::string table_args(const DlrmSparseShape& s) {
  const bool u8 = s.format == TableFormat::RowwiseU8;
  std::string r;
  for (int64_t t = 0; t < s.tables(); ++t) {
    r += fmt::format(
        "    case {0}: args[{0}] = TableArgs{{table_{0}_, {1}, indices_{0}_, offsets_{0}_, "
        "n_indices_{0}, "
        "{2}LL}}; break;\n",
        t, u8 ? fmt::format("static_cast<const float*>(scale_bias_{}_)", t) : "nullptr",
        s.rows[size_t(t)]);
  }
  return r;
}

}  // namespace

DlrmSparseLayout dlrm_sparse_layout(const DlrmSparseShape& s) {
  DlrmSparseLayout l;
  const int64_t esize = s.format == TableFormat::RowwiseU8 ? 1 : int64_t(dtype_size(s.dtype));
  l.vec = 1;
  for (int64_t v = 16 / esize; v > 1; v /= 2)
    if (s.dim % v == 0) {
      l.vec = v;
      break;
    }
  // At most 8 lanes per row: a warp gathers >= 4 rows at once (more loads in flight).
  // More lanes per row when a lane would hold over 16 accumulators (ptxas spills past that).
  const int64_t chunks = s.dim / l.vec;
  l.lanes_per_row = std::min<int64_t>(chunks, 8);
  while ((chunks + l.lanes_per_row - 1) / l.lanes_per_row * l.vec > 16 && l.lanes_per_row < 32)
    l.lanes_per_row = std::min<int64_t>({2 * l.lanes_per_row, chunks, 32});
  const int64_t n = 1 + s.tables();
  l.mma = s.dtype == DType::BF16 && n <= 32;
  if (l.mma) {
    // N bf16 rows of k16-padded columns + 8: rows 4 mod 8 banks apart (conflict-free fragments).
    l.row_stride = (s.dim + 15) / 16 * 16 + 8;
    l.warp_floats = span_floats(s) + n * l.row_stride / 2;
  } else {
    l.row_stride = (s.dim + 3) / 4 * 4 + 4;  // 16-byte rows, shifted by 4 banks per row
    l.tiled = s.dim % 2 == 0 && n >= 8;
    const int64_t t_rows = l.tiled ? (n + 3) / 4 * 4 : n;  // tiles read whole 4-row blocks
    l.warp_floats = span_floats(s) + t_rows * l.row_stride;
  }
  for (l.warps = 8; l.warps > 1 && l.warps * l.warp_floats * 4 > 96 * 1024; l.warps /= 2) {
  }
  return l;
}

std::string why_unsupported(const DlrmSparseShape& s) {
  const DlrmSparseLayout l = dlrm_sparse_layout(s);
  if (l.warp_floats * 4 > kMaxSharedBytes)
    return fmt::format("one sample's features need {} bytes of shared memory (max {})",
                       l.warp_floats * 4, kMaxSharedBytes);
  // Accumulators per lane, vector path and the element-by-element path (misaligned tables).
  const int64_t acc = (s.dim / l.vec + l.lanes_per_row - 1) / l.lanes_per_row * l.vec;
  const int64_t acc1 = (s.dim + l.lanes_per_row - 1) / l.lanes_per_row;
  if (acc > 16 || acc1 > 16)
    return fmt::format("embedding dim {} needs {} accumulators per lane (max 16)", s.dim,
                       std::max(acc, acc1));
  if (s.tables() > 32 * l.warps)  // thread t stages table t's arguments
    return fmt::format("{} tables, more than the block's {} threads", s.tables(), 32 * l.warps);
  return "";
}

CustomKernel emit_dlrm_sparse(const DlrmSparseShape& s) {
  s.validate();
  if (std::string why = why_unsupported(s); !why.empty())
    throw std::invalid_argument("[dlrm_sparse] unsupported: " + why);
  const DlrmSparseLayout l = dlrm_sparse_layout(s);
  const bool u8 = s.format == TableFormat::RowwiseU8;
  const char* x_type = s.dtype == DType::BF16 ? "unsigned short" : "float";
  const bool upper = s.pairs == nn::PairOrder::Upper;
  const std::string desc = fmt::format(
      "d {}, {} tables, {} tables, {} x and output, {} indices, {} mode, width {}{}{}{}", s.dim, s.tables(),
      u8 ? "row-wise u8" : "dense", dtype_name(s.dtype), dtype_name(s.index_dtype),
      s.mode == nn::BagMode::Sum ? "sum" : "mean", s.padded_width(),
      s.bags_only ? ", bags only (no x; pooled bags after each row)" : "",
      s.closed ? ", closed offsets" : "", upper ? ", upper pair order" : "");
  std::string rows;
  for (int64_t r : s.rows) rows += fmt::format("{},", r);
  CustomKernel k;
  k.entry = fmt::format("dlrm_sparse_{:016x}", fnv1a(desc + "; rows " + rows));
  k.block = {unsigned(32 * l.warps), 1, 1};
  k.grid = {unsigned((s.batch + l.warps - 1) / l.warps), 1, 1};
  k.shared_bytes = unsigned(l.warps * l.warp_floats * 4);
  std::string& src = k.source;
  src +=
      "// dlrm_sparse: embedding bags + dot interaction (generated by "
      "src/custom/dlrm_sparse/emit.cpp).\n";
  src += fmt::format("// {}; {} warps per block, one sample per warp; {}.\n", desc, l.warps,
                     l.mma     ? "pairs by mma.sync on bf16 features"
                     : l.tiled ? "pairs in 4x4 register tiles"
                               : "one pair per lane");
  src += "#include \"dlrm_sparse.cuh\"\n\n";
  // At least 1024 threads per SM: ptxas may use up to 64 registers (plain __launch_bounds__(256)
  // lets it aim for 32 and spill).
  src += fmt::format("extern \"C\" __global__ void __launch_bounds__({}, {}) {}(\n{}) {{\n",
                     32 * l.warps, 32 / l.warps, k.entry, params(s));
  src += "  using namespace dlrm_sparse;\n";
  src +=
      fmt::format("  using X = {};\n  using E = {};\n  using I = {};\n", x_type,
                  u8 ? "unsigned char" : x_type, s.index_dtype == DType::I64 ? "long long" : "int");
  src += fmt::format(
      "  constexpr int D = {};\n  constexpr int K = {};\n  constexpr int DP = {};\n"
      "  constexpr int WP = {};\n",
      s.dim, s.tables(), l.row_stride, s.padded_width());
  src += fmt::format(
      "  constexpr int VEC = {};\n  constexpr int LPS = {};\n  constexpr int WARPS = {};\n", l.vec,
      l.lanes_per_row, l.warps);
  // The batch at run time (offsets_0 has one entry per sample, one more when closed): the source
  // serves every batch.
  src += s.closed ? "  const long long kBatch = n_offsets_0 - 1;\n" : "  const long long kBatch = n_offsets_0;\n";
  src += l.mma ? "  // Per warp: the bag spans (3K i64), then T[K + 1][DP] bf16.\n"
               : "  // Per warp: the bag spans (3K i64), then T[K + 1][DP] fp32.\n";
  src += fmt::format("  constexpr int kWarpFloats = {};\n", l.warp_floats);
  src += "  __shared__ TableArgs args[K];\n  extern __shared__ __align__(16) float smem[];\n";
  src += "  switch (threadIdx.x) {\n" + table_args(s) +
         "    default: break;\n  }\n  __syncthreads();\n";
  src += "  const int warp = threadIdx.x / 32;\n  const int lane = threadIdx.x % 32;\n";
  src += "  const long long b = static_cast<long long>(blockIdx.x) * WARPS + warp;\n";
  src += "  if (b >= kBatch) return;\n";
  src += "  float* const wsm = smem + warp * kWarpFloats;\n";
  src += fmt::format(
      "  sample<X, E, I, D, K, DP, WP, VEC, LPS, {}, {}, {}, {}, {}, {}>(static_cast<X*>(out_),\n"
      "      static_cast<const X*>({}), reinterpret_cast<long long*>(wsm), {}, args, b, kBatch,\n"
      "      lane, error);\n}}\n",
      u8 ? "true" : "false", s.mode == nn::BagMode::Mean ? "true" : "false",
      l.tiled ? "true" : "false", s.bags_only ? "true" : "false", s.closed ? "true" : "false",
      upper ? "true" : "false", s.bags_only ? "nullptr" : "x_",
      l.mma ? fmt::format("reinterpret_cast<unsigned short*>(wsm + {})", span_floats(s))
            : fmt::format("wsm + {}", span_floats(s)));
  return k;
}

std::optional<CustomKernel> DlrmSparse::cuda_kernel(const KernelRequest& request) const {
  const std::vector<std::vector<int64_t>>& input_dims = request.dims;
  const std::vector<DType>& input_dtypes = request.dtypes;
  const DlrmSparseShape& s = shape_;
  if (input_dtypes.size() != input_dims.size()) return std::nullopt;
  auto is = [&](size_t i, std::vector<int64_t> dims, DType dt) {
    return input_dtypes[i] == dt && (input_dims[i] == dims || (dims.size() == 1 && dims[0] < 0 &&
                                                               input_dims[i].size() == 1));
  };
  const bool u8 = s.format == TableFormat::RowwiseU8;
  if (input_dims.size() != size_t(s.input_count())) return std::nullopt;
  // The batch of this execute: offsets_0's length (a dynamic batch), which must equal a static one.
  const size_t first_offsets = (s.bags_only ? 0 : 1) + size_t(s.inputs_per_table()) - 1;
  if (input_dims[first_offsets].size() != 1) return std::nullopt;
  const int64_t batch = input_dims[first_offsets][0] - (s.closed ? 1 : 0);
  if (batch <= 0 || (!s.dynamic_batch && batch != s.batch)) return std::nullopt;
  if (!s.bags_only && !is(0, {batch, s.dim}, s.dtype)) return std::nullopt;
  size_t i = s.bags_only ? 0 : 1;
  for (int64_t t = 0; t < s.tables(); ++t) {
    if (!is(i++, {s.rows[size_t(t)], s.dim}, u8 ? DType::U8 : s.dtype)) return std::nullopt;
    if (u8 && !is(i++, {s.rows[size_t(t)], 2}, DType::F32)) return std::nullopt;
    if (!is(i++, {-1}, s.index_dtype) || !is(i++, {batch + (s.closed ? 1 : 0)}, s.index_dtype)) return std::nullopt;
  }
  DlrmSparseShape at = s;
  at.batch = batch;  // the grid's size only: the source reads the batch at run time
  if (!why_unsupported(at).empty()) return std::nullopt;
  return emit_dlrm_sparse(at);
}

CustomKernel emit_dlrm_sparse_finish(const DlrmSparseShape& s) {
  s.validate();
  const int64_t es = int64_t(dtype_size(s.dtype)), wp = s.padded_width();
  const int64_t row = wp + s.tables() * s.dim;
  // 16-byte loads of the pooled bags when every bag starts 16-byte aligned in the row.
  int64_t vec = 16 / es;
  if ((s.dim * es) % 16 != 0 || (wp * es) % 16 != 0 || (row * es) % 16 != 0) vec = 1;
  constexpr int kWarps = 8;
  const char* x_type = s.dtype == DType::BF16 ? "unsigned short" : "float";
  const std::string desc =
      fmt::format("d {}, {} tables, {}, width {}", s.dim, s.tables(), dtype_name(s.dtype), wp);
  CustomKernel k;
  k.entry = fmt::format("dlrm_sparse_finish_{:016x}", fnv1a(desc));
  k.block = {32 * kWarps, 1, 1};
  k.grid = {unsigned((s.batch + kWarps - 1) / kWarps), 1, 1};
  k.shared_bytes = unsigned(kWarps * s.dim * 4);
  k.source = fmt::format(
      "// dlrm_sparse_finish: x and the pairs with x into the bags kernel's rows (generated by\n"
      "// src/custom/dlrm_sparse/emit.cpp); {}; one sample per warp.\n"
      "#include \"dlrm_sparse.cuh\"\n\n"
      "extern \"C\" __global__ void __launch_bounds__({}) {}(\n"
      "    const void* x_, const void* bags_, void* out_, int* error, long long n_x, long long n_bags) {{\n"
      "  using namespace dlrm_sparse;\n"
      "  using X = {};\n"
      "  extern __shared__ __align__(16) float smem[];\n"
      "  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;\n"
      "  const long long b = static_cast<long long>(blockIdx.x) * {} + warp;\n"
      "  if (b >= n_x / {}LL) return;  // the batch at run time\n"
      "  finish<X, {}, {}, {}, {}>(static_cast<X*>(out_), static_cast<const X*>(x_),\n"
      "      static_cast<const X*>(bags_), smem + warp * {}, b, lane);\n}}\n",
      desc, 32 * kWarps, k.entry, x_type, kWarps, s.dim, s.dim, s.tables(), wp, vec, s.dim);
  return k;
}

std::optional<CustomKernel> DlrmSparseFinish::cuda_kernel(const KernelRequest& request) const {
  const std::vector<std::vector<int64_t>>& input_dims = request.dims;
  const std::vector<DType>& input_dtypes = request.dtypes;
  DlrmSparseShape s = shape_;
  if (input_dims.size() != 2 || input_dims[0].size() != 2) return std::nullopt;
  const int64_t batch = input_dims[0][0];
  if (batch <= 0 || (!s.dynamic_batch && batch != s.batch)) return std::nullopt;
  const std::vector<std::vector<int64_t>> want{{batch, s.dim}, {batch, s.row_width()}};
  if (input_dims != want || input_dtypes != std::vector<DType>{s.dtype, s.dtype})
    return std::nullopt;
  s.batch = batch;  // the grid's size only
  return emit_dlrm_sparse_finish(s);
}

}  // namespace luminal::custom
