// DlrmSparse's shape checks and reference decomposition: jagged embedding bags from ordinary ops
// (a bag-membership mask times the gathered rows), then nn::dot_interaction.
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "custom/dlrm_sparse/op.h"

namespace luminal::custom {

Expr DlrmSparseShape::batch_dim() const {
  return dynamic_batch ? Expr::sym(batch_symbol) : Expr(batch);
}

int64_t DlrmSparseShape::out_width() const {
  const int64_t n = 1 + tables();
  return dim + n * (n - 1) / 2;
}

void DlrmSparseShape::validate() const {
  auto fail = [](const std::string& why) { throw std::invalid_argument("[dlrm_sparse] " + why); };
  if (batch <= 0) fail(fmt::format("batch must be positive, got {}", batch));
  if (dim <= 0) fail(fmt::format("embedding dim must be positive, got {}", dim));
  if (rows.empty()) fail("needs at least one table");
  for (size_t t = 0; t < rows.size(); ++t)
    if (rows[t] <= 0) fail(fmt::format("table_{} has {} rows", t, rows[t]));
  if (dtype != DType::F32 && dtype != DType::BF16)
    fail(fmt::format("dtype must be f32 or bf16, got {}", dtype_name(dtype)));
  if (index_dtype != DType::I32 && index_dtype != DType::I64)
    fail(fmt::format("index dtype must be i32 or i64, got {}", dtype_name(index_dtype)));
  if (col_align != 1 && col_align != 2 && col_align != 4 && col_align != 8 && col_align != 16)
    fail(fmt::format("col_align must be 1, 2, 4, 8 or 16, got {}", col_align));
  if (bags_only && pairs != nn::PairOrder::Lower)
    fail("the two-kernel path (bags_only) writes the lower pair order only");
}

DlrmSparse::DlrmSparse(DlrmSparseShape shape) : shape_(std::move(shape)) { shape_.validate(); }

namespace {

// Any length (a dynamic nnz) in check_input's dims.
const Expr kAny = Expr(-1);

// Throws "[dlrm_sparse] input 'table_2' is u8 [10, 4], expected f32 [10, 16]" unless t has these
// dims (kAny accepts any size, e.g. a dynamic nnz) and dtype.
void check_input(const GraphTensor& t, const std::vector<Expr>& dims, DType dt,
                 const std::string& what) {
  bool ok = t.dtype == dt && t.rank() == static_cast<int>(dims.size());
  for (size_t i = 0; ok && i < dims.size(); ++i)
    ok = dims[i].same(kAny) || t.dims()[i].same(dims[i]);
  if (ok) return;
  std::string want;
  for (size_t i = 0; i < dims.size(); ++i)
    want += (i ? ", " : "") + (dims[i].same(kAny) ? std::string("nnz") : dims[i].to_string());
  throw std::invalid_argument(fmt::format("[dlrm_sparse] input '{}' is {} {}, expected {} [{}]",
                                          what, dtype_name(t.dtype), shape_string(t.dims()),
                                          dtype_name(dt), want));
}

// One table's inputs, checked.
struct TableInputs {
  GraphTensor table, scale_bias, indices, offsets;
};

TableInputs table_inputs(const DlrmSparseShape& s, const std::vector<GraphTensor>& in, int64_t t) {
  const size_t base = 1 + size_t(t * s.inputs_per_table());
  const bool u8 = s.format == TableFormat::RowwiseU8;
  TableInputs r;
  r.table = in[base];
  check_input(r.table, {s.rows[size_t(t)], s.dim}, u8 ? DType::U8 : s.dtype,
              fmt::format("table_{}", t));
  if (u8) {
    r.scale_bias = in[base + 1];
    check_input(r.scale_bias, {s.rows[size_t(t)], 2}, DType::F32, fmt::format("scale_bias_{}", t));
  }
  r.indices = in[base + (u8 ? 2 : 1)];
  r.offsets = in[base + (u8 ? 3 : 2)];
  check_input(r.indices, {kAny}, s.index_dtype, fmt::format("indices_{}", t));
  check_input(r.offsets, {s.offsets_dim()}, s.index_dtype, fmt::format("offsets_{}", t));
  return r;
}

GraphTensor to_f32(const GraphTensor& t) { return t.dtype == DType::F32 ? t : t.cast(DType::F32); }

// The gathered rows [nnz, d] in f32 (row-wise u8: code * scale + bias); with closed offsets the
// indices outside every bag (other keys' ids in a KeyedJaggedTensor) are read as row 0.
GraphTensor gathered_rows(const DlrmSparseShape& s, const TableInputs& t) {
  const GraphTensor ids = s.closed ? nn::indices_outside_bags_zeroed(t.indices, t.offsets) : t.indices;
  if (!t.scale_bias.graph) return to_f32(t.table.gather(ids));
  return nn::gather_rowwise_u8(t.table, t.scale_bias, ids);
}

// bag[b] = sum (or mean) of rows[j] for offsets[b] <= j < end[b], end[b] = offsets[b + 1] (nnz for
// the last open bag), as mask[b, j] @ rows. Offsets outside [0, nnz] fail the first gather (naming
// the offsets input); a decreasing pair fails the second.
GraphTensor embedding_bag(Graph& g, const DlrmSparseShape& s, const TableInputs& t) {
  const DType it = s.index_dtype;
  const Expr nnz = t.indices.dims()[0];
  const Expr B = s.batch_dim();
  const GraphTensor upto_nnz = g.arange(nnz + 1, it);
  GraphTensor off = upto_nnz.gather(t.offsets);
  const GraphTensor last = upto_nnz.slice(0, nnz, nnz + 1);  // [1] = nnz
  // A dynamic B may be 1: slice(1, B) is then empty, which concat accepts.
  const GraphTensor end = s.closed                ? off.slice(0, 1, B + 1)
                          : B.as_const() == 1 ? last
                                              : concat({off.slice(0, 1, B), last}, 0);
  if (s.closed) off = off.slice(0, 0, B);
  off = off + g.arange(1, it).gather(off.gt(end).cast(it));  // + 0, or an index error
  const GraphTensor j = g.arange(nnz, it).expand_dim(0, B);  // [B, nnz]
  const GraphTensor mask =
      off.expand_dim(1, nnz).le(j).cast(DType::F32) * j.lt(end.expand_dim(1, nnz)).cast(DType::F32);
  const GraphTensor sum = mask.matmul(gathered_rows(s, t));  // [B, d]
  if (s.mode == nn::BagMode::Sum) return sum;
  // PyTorch: the mean of an empty bag is 0 (0 / max(count, 1)).
  const GraphTensor count = (end - off).cast(DType::F32).maximum(g.constant(1.0, DType::F32));
  return sum / count.expand_dim(1, s.dim);
}

}  // namespace

GraphTensor DlrmSparse::decompose(Graph& g, const std::vector<GraphTensor>& inputs) const {
  const DlrmSparseShape& s = shape_;
  if (inputs.size() != size_t(s.input_count())) {
    throw std::invalid_argument(fmt::format(
        "[dlrm_sparse] {} inputs, expected {} ({}per table: {})", inputs.size(), s.input_count(),
        s.bags_only ? "" : "x, then ",
        s.format == TableFormat::RowwiseU8 ? "table, scale_bias, indices, offsets"
                                           : "table, indices, offsets"));
  }
  // The bags kernel (bags_only) sees no x: its interaction runs on a zero x, which zeroes the x
  // columns and the pairs with x (DlrmSparseFinish writes them).
  std::vector<GraphTensor> tables = inputs;
  GraphTensor x;
  if (s.bags_only) {
    x = g.constant(0.0, DType::F32).expand_dim(0, s.batch_dim()).expand_dim(1, s.dim);
    tables.insert(tables.begin(), x);  // table_inputs() counts from 1
  } else {
    check_input(inputs[0], {s.batch_dim(), s.dim}, s.dtype, "x");
    x = to_f32(inputs[0]);
  }
  std::vector<GraphTensor> bags;
  for (int64_t t = 0; t < s.tables(); ++t) {
    const GraphTensor bag = embedding_bag(g, s, table_inputs(s, tables, t));
    // A BF16 op's bags are bf16 (summed in fp32, rounded once), as in a bf16 PyTorch model.
    bags.push_back(s.dtype == DType::BF16 ? bag.cast(DType::BF16).cast(DType::F32) : bag);
  }
  GraphTensor out = nn::dot_interaction(x, bags, s.pairs);
  if (s.dtype != DType::F32) out = out.cast(s.dtype);
  const int64_t extra = s.padded_width() - s.out_width();
  if (extra > 0) out = out.pad(1, 0, extra);
  if (s.bags_only) {
    std::vector<GraphTensor> parts{out};
    for (const GraphTensor& b : bags) parts.push_back(s.dtype == DType::F32 ? b : b.cast(s.dtype));
    out = concat(parts, 1);
  }
  return out.contiguous();
}

DlrmSparseFinish::DlrmSparseFinish(DlrmSparseShape shape) : shape_(std::move(shape)) {
  shape_.bags_only = true;
  shape_.validate();
}

GraphTensor DlrmSparseFinish::decompose(Graph&, const std::vector<GraphTensor>& inputs) const {
  const DlrmSparseShape& s = shape_;
  if (inputs.size() != 2)
    throw std::invalid_argument(
        fmt::format("[dlrm_sparse_finish] {} inputs, expected 2 (x, bags)", inputs.size()));
  check_input(inputs[0], {s.batch_dim(), s.dim}, s.dtype, "x");
  check_input(inputs[1], {s.batch_dim(), s.row_width()}, s.dtype, "bags");
  const GraphTensor& x = inputs[0];
  const GraphTensor& a = inputs[1];
  const GraphTensor xf = to_f32(x);
  const int64_t d = s.dim, wp = s.padded_width();
  // [x, then per feature i: the pair (i, 0) computed here, the pairs (i, 1..i-1) as the bags op
  // wrote them], then the zero columns.
  std::vector<GraphTensor> parts{x};
  int64_t col = d;
  for (int64_t i = 1; i <= s.tables(); ++i) {
    const GraphTensor bag = to_f32(a.slice(1, wp + (i - 1) * d, wp + i * d));
    GraphTensor dot = (xf * bag).sum(1).expand_dim(1, 1);
    parts.push_back(s.dtype == DType::F32 ? dot : dot.cast(s.dtype));
    if (i > 1) parts.push_back(a.slice(1, col + 1, col + i));
    col += i;
  }
  if (wp > col) parts.push_back(a.slice(1, col, wp));
  return concat(parts, 1).contiguous();
}

}  // namespace luminal::custom
