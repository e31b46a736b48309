// BagConcat's CUDA source generator: one kernel per (d, tables, dtypes, mode) over bag_concat.cuh.
// Every table's pointers and element counts are kernel parameters (custom_op.h's order: inputs,
// output, error word, counts); part blockIdx.z picks its table's with a switch, so the grid is
// (samples, column chunks, 1 + F) and one launch writes the whole [B, (1 + F) d] row block (F and
// [B, F d] without x).
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "custom/bag_concat/op.h"
#include "custom/embedding_bag/op.h"
#include "custom/kernel_name.h"

namespace luminal::custom {

namespace {

constexpr int64_t kBlockThreads = 256;
constexpr int64_t kSplits = 4, kSplitBatch = 4096;
constexpr int64_t kMaxGridX = (int64_t(1) << 31) - 1, kMaxGridY = 65535, kMaxGridZ = 65535;
// cuLaunchKernel's classic parameter limit; past it the decomposition runs (one kernel per table).
constexpr int64_t kMaxParamBytes = 4096;

// Pointers and element counts of x (when with_x) and `per` inputs per table, then out and the error word.
int64_t param_bytes(const BagConcatShape& s) {
  return 8 * (2 * (s.first_table_input() + s.inputs_per_table() * s.tables()) + 2);
}

}  // namespace

int64_t bag_splits(const BagConcatShape& s, int64_t batch) {
  const EmbeddingBagLayout l = embedding_bag_layout(s.dim, s.dtype);
  return s.format == TableFormat::Dense && batch <= kSplitBatch && l.bags_per_block >= kSplits ? kSplits : 1;
}

CustomKernel emit_bag_concat(const BagConcatShape& s, int64_t batch) {
  s.validate();
  const EmbeddingBagLayout l = embedding_bag_layout(s.dim, s.dtype);
  const bool mean = s.mode == nn::BagMode::Mean, i64 = s.index_dtype == DType::I64;
  const bool u8 = s.format == TableFormat::RowwiseU8;
  const std::string desc =
      fmt::format("d {}, {} tables{}, {} x/{}output, {} indices and offsets, {}{}", s.dim, s.tables(),
                  u8 ? " (row-wise u8 codes, f32 scale and bias)" : "", dtype_name(s.dtype), u8 ? "" : "tables/",
                  dtype_name(s.index_dtype), mean ? "mean" : "sum",
                  s.with_x ? "" : s.closed ? ", bags only (no x), B + 1 offsets" : ", bags only (no x)");
  CustomKernel k;
  k.entry = fmt::format("bag_concat_{:016x}", fnv1a(desc));
  // Up to batch kSplitBatch the S threads of a bag split its rows (bag_concat.cuh's split_bag):
  // there the longest bag's chain of loads bounds the kernel, not bandwidth.
  const int64_t splits = bag_splits(s, batch);
  const int64_t by = std::max<int64_t>(1, std::min(l.bags_per_block / splits, batch));
  k.block = {unsigned(l.threads_per_bag), unsigned(splits == 1 ? by : splits), unsigned(splits == 1 ? 1 : by)};
  k.grid = {unsigned((std::max<int64_t>(batch, 0) + by - 1) / by), unsigned(l.column_blocks),
            unsigned(s.parts())};
  std::string& src = k.source;
  src += "// bag_concat: x and every table's pooled bag in one row (src/custom/bag_concat/emit.cpp).\n";
  src += fmt::format("// {}; {} elements per load; rows, nnz and B come from the element counts.\n", desc,
                     l.vec);
  src += "#include \"bag_concat.cuh\"\n\n";
  src += fmt::format("extern \"C\" __global__ void __launch_bounds__({}, 4) {}(\n{}", kBlockThreads, k.entry,
                     s.with_x ? "    const void* x,\n" : "");
  // Per table: codes or rows, (scale_bias,) indices, offsets; their counts in the same order.
  for (int64_t t = 0; t < s.tables(); ++t)
    src += fmt::format("    const void* t{0},{1} const void* i{0}, const void* o{0},\n", t,
                       u8 ? fmt::format(" const void* s{},", t) : "");
  src += fmt::format("    void* out, int* error{}", s.with_x ? ",\n    long long n_x" : "");
  for (int64_t t = 0; t < s.tables(); ++t)
    src += fmt::format("{2} long long nt{0},{1} long long ni{0}, long long no{0}", t,
                       u8 ? fmt::format(" long long ns{},", t) : "", s.with_x || t > 0 ? "," : ",\n   ");
  src += ") {\n";
  if (!s.with_x) src += "  const void* x = nullptr;\n";
  // B: x's rows, or table 0's offsets (one more when closed).
  src += s.with_x ? fmt::format("  const long long batch = n_x / {};\n", s.dim)
                  : fmt::format("  const long long batch = no0{};\n", s.closed ? " - 1" : "");
  src += fmt::format("  using I = {};\n  bag_concat::Part<I> part{{}};\n", i64 ? "long long" : "int");
  src += "  switch (blockIdx.z) {\n";
  for (int64_t t = 0; t < s.tables(); ++t)
    src += fmt::format("    case {1}: part = {{t{0}, static_cast<const I*>(i{0}), static_cast<const I*>(o{0}), "
                       "nt{0}, ni{0}, no{0}, {2}}}; break;\n", t, t + s.first_table_input(),
                       u8 ? fmt::format("static_cast<const float*>(s{})", t) : "nullptr");
  src += "    default: break;\n  }\n";
  src += fmt::format("  bag_concat::run<embedding_bag::Elem::{}, I, {}, {}, {}, {}, {}, {}, {}>(x, batch, part, out, error);\n}}\n",
                     s.dtype == DType::BF16 ? "BF16" : "F32", s.dim, l.vec, mean ? "true" : "false", s.tables(),
                     u8 ? "true" : "false", splits, s.with_x ? "true" : "false");
  return k;
}

std::optional<CustomKernel> BagConcat::cuda_kernel(const KernelRequest& request) const {
  const bool u8 = shape_.format == TableFormat::RowwiseU8;
  const size_t per = size_t(shape_.inputs_per_table()), first = size_t(shape_.first_table_input());
  const size_t want = first + per * size_t(shape_.tables());
  if (request.dims.size() != want || request.dtypes.size() != want) return std::nullopt;
  for (size_t i = 0; i < want; ++i) {
    const size_t k = i < first ? 0 : (i - first) % per;  // position within the table's inputs
    const DType expect = i < first ? shape_.dtype
                         : k == 0 ? (u8 ? DType::U8 : shape_.dtype)
                         : (u8 && k == 1) ? DType::F32
                                          : shape_.index_dtype;
    if (request.dtypes[i] != expect) return std::nullopt;
  }
  const std::optional<int64_t> b = shape_.batch_of(request.dims);
  if (!b) return std::nullopt;
  const int64_t batch = *b;
  if (batch <= 0 || param_bytes(shape_) > kMaxParamBytes || shape_.parts() > kMaxGridZ) return std::nullopt;
  const EmbeddingBagLayout l = embedding_bag_layout(shape_.dim, shape_.dtype);
  if (l.column_blocks > kMaxGridY || (batch + l.bags_per_block - 1) / l.bags_per_block > kMaxGridX)
    return std::nullopt;
  return emit_bag_concat(shape_, batch);
}

}  // namespace luminal::custom
