// BagConcat's shape checks and reference decomposition (concat of x and EmbeddingBag per table).
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "custom/bag_concat/op.h"
#include "custom/embedding_bag/op.h"
#include "luminal/nn.h"

namespace luminal::custom {

void BagConcatShape::validate() const {
  auto fail = [](const std::string& m) { throw std::invalid_argument("[bag_concat] " + m); };
  if (dim <= 0) fail(fmt::format("dim is {}, expected > 0", dim));
  if (rows.empty()) fail("no tables");
  for (size_t k = 0; k < rows.size(); ++k)
    if (rows[k] <= 0) fail(fmt::format("table {} has {} rows", k, rows[k]));
  if (dtype != DType::F32 && dtype != DType::BF16) fail(fmt::format("dtype {}, expected f32 or bf16", dtype_name(dtype)));
  if (index_dtype != DType::I32 && index_dtype != DType::I64)
    fail(fmt::format("index dtype {}, expected i32 or i64", dtype_name(index_dtype)));
}

std::optional<int64_t> BagConcatShape::batch_of(const std::vector<std::vector<int64_t>>& dims) const {
  if (dims.size() != size_t(first_table_input() + inputs_per_table() * tables())) return std::nullopt;
  const std::vector<int64_t>& lead = dims[size_t(with_x ? 0 : inputs_per_table() - 1)];
  if (lead.size() != (with_x ? 2u : 1u)) return std::nullopt;
  return lead[0] - (with_x || !closed ? 0 : 1);
}

BagConcat::BagConcat(BagConcatShape shape) : shape_(std::move(shape)) { shape_.validate(); }

GraphTensor BagConcat::decompose(Graph& g, const std::vector<GraphTensor>& inputs) const {
  (void)g;
  const int64_t per = shape_.inputs_per_table(), first = shape_.first_table_input();
  const size_t want = size_t(first + per * shape_.tables());
  if (inputs.size() != want)
    throw std::invalid_argument(fmt::format("[bag_concat] {} inputs, expected {} ({}table, {}indices, offsets per table)",
                                            inputs.size(), want, first == 1 ? "x, then " : "",
                                            per == 4 ? "scale_bias, " : ""));
  std::vector<GraphTensor> parts;
  if (shape_.with_x) parts.push_back(inputs[0]);
  for (int64_t t = 0; t < shape_.tables(); ++t) {
    const int64_t base = first + per * t;  // the table's inputs: table, (scale_bias,) indices, offsets
    const GraphTensor& table = inputs[size_t(base)];
    const GraphTensor& indices = inputs[size_t(base + per - 2)];
    const GraphTensor& offsets = inputs[size_t(base + per - 1)];
    if (per == 3) {
      parts.push_back(embedding_bag(table, indices, offsets, shape_.mode, shape_.closed));
      continue;
    }
    // Row-wise u8: the gathered rows dequantized, pooled in f32.
    const GraphTensor ids = shape_.closed ? nn::indices_outside_bags_zeroed(indices, offsets) : indices;
    const GraphTensor rows = nn::gather_rowwise_u8(table, inputs[size_t(base + 1)], ids);
    const GraphTensor bag = nn::jagged_bag(rows, offsets, shape_.mode, shape_.closed);
    parts.push_back(bag.dtype == shape_.dtype ? bag : bag.cast(shape_.dtype));
  }
  const GraphTensor x0 = parts.size() == 1 ? parts[0] : concat(parts, 1);
  return shape_.stacked ? x0.split_dims(1, shape_.dim) : x0;
}

namespace {

// The BagConcat node over x (null: without x) and the tables; checks every input against the first.
// dtype: the output's without x (with x: x's).
GraphTensor build(const GraphTensor* x, DType dtype, const std::vector<GraphTensor>& tables,
                  const std::vector<GraphTensor>& indices, const std::vector<GraphTensor>& offsets, nn::BagMode mode,
                  bool stacked, const std::vector<GraphTensor>& scale_bias, bool closed) {
  const bool u8 = !scale_bias.empty();
  if ((x != nullptr && x->rank() != 2) || tables.empty() || tables.size() != indices.size() ||
      tables.size() != offsets.size() || (u8 && scale_bias.size() != tables.size()))
    throw std::invalid_argument(fmt::format("[bag_concat] x {} with {} tables, {} indices, {} offsets",
                                            x != nullptr ? shape_string(x->dims()) : "(none)", tables.size(),
                                            indices.size(), offsets.size()));
  BagConcatShape s;
  const auto d = x != nullptr ? x->dims()[1].as_const() : tables[0].rank() == 2 ? tables[0].dims()[1].as_const()
                                                                                 : std::nullopt;
  if (!d) throw std::invalid_argument(fmt::format("[bag_concat] {} width must be a number", x ? "x's" : "table 0's"));
  s.dim = *d, s.mode = mode, s.index_dtype = indices[0].dtype, s.stacked = stacked;
  s.closed = closed, s.with_x = x != nullptr;
  s.format = u8 ? TableFormat::RowwiseU8 : TableFormat::Dense;
  s.dtype = x != nullptr ? x->dtype : dtype;
  const DType table_dtype = u8 ? DType::U8 : s.dtype;
  std::vector<GraphTensor> in;
  if (x != nullptr) in.push_back(*x);
  for (size_t k = 0; k < tables.size(); ++k) {
    if (!u8) check_embedding_bag_inputs(tables[k], indices[k], offsets[k]);
    const auto rows = tables[k].dims()[0].as_const();
    if (u8 && (scale_bias[k].dtype != DType::F32 || scale_bias[k].rank() != 2 ||
               !scale_bias[k].dims()[0].same(tables[k].dims()[0]) || scale_bias[k].dims()[1].as_const() != 2))
      throw std::invalid_argument(fmt::format("[bag_concat] table {}'s scale_bias is {} {}; expected f32 [rows, 2]", k,
                                              dtype_name(scale_bias[k].dtype), shape_string(scale_bias[k].dims())));
    if (!rows || tables[k].rank() != 2 || tables[k].dims()[1].as_const() != s.dim || tables[k].dtype != table_dtype ||
        indices[k].dtype != s.index_dtype || offsets[k].dtype != s.index_dtype || indices[k].rank() != 1 ||
        offsets[k].rank() != 1)
      throw std::invalid_argument(fmt::format("[bag_concat] table {} is {} {} with {} indices; expected [rows, {}] {} "
                                              "with {} indices", k, dtype_name(tables[k].dtype),
                                              shape_string(tables[k].dims()), dtype_name(indices[k].dtype), s.dim,
                                              dtype_name(table_dtype), dtype_name(s.index_dtype)));
    s.rows.push_back(*rows);
    if (u8) in.insert(in.end(), {tables[k], scale_bias[k], indices[k], offsets[k]});
    else in.insert(in.end(), {tables[k], indices[k], offsets[k]});
  }
  return custom_op(std::make_shared<BagConcat>(s), in);
}

}  // namespace

GraphTensor bag_concat(const GraphTensor& x, const std::vector<GraphTensor>& tables,
                       const std::vector<GraphTensor>& indices, const std::vector<GraphTensor>& offsets,
                       nn::BagMode mode, bool stacked, const std::vector<GraphTensor>& scale_bias, bool closed) {
  return build(&x, x.dtype, tables, indices, offsets, mode, stacked, scale_bias, closed);
}

GraphTensor bags_concat(const std::vector<GraphTensor>& tables, const std::vector<GraphTensor>& indices,
                        const std::vector<GraphTensor>& offsets, nn::BagMode mode, DType dtype, bool stacked,
                        const std::vector<GraphTensor>& scale_bias, bool closed) {
  return build(nullptr, dtype, tables, indices, offsets, mode, stacked, scale_bias, closed);
}

}  // namespace luminal::custom
