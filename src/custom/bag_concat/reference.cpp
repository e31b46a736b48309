// BagConcat's shape checks and reference decomposition (concat of x and EmbeddingBag per table).
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "custom/bag_concat/op.h"
#include "custom/embedding_bag/op.h"

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

BagConcat::BagConcat(BagConcatShape shape) : shape_(std::move(shape)) { shape_.validate(); }

GraphTensor BagConcat::decompose(Graph& g, const std::vector<GraphTensor>& inputs) const {
  (void)g;
  const size_t want = 1 + 3 * size_t(shape_.tables());
  if (inputs.size() != want)
    throw std::invalid_argument(fmt::format("[bag_concat] {} inputs, expected {} (x, then table, indices, "
                                            "offsets per table)", inputs.size(), want));
  std::vector<GraphTensor> parts{inputs[0]};
  for (int64_t t = 0; t < shape_.tables(); ++t) {
    const GraphTensor bag = embedding_bag(inputs[1 + 3 * t], inputs[2 + 3 * t], inputs[3 + 3 * t], shape_.mode);
    parts.push_back(bag);
  }
  const GraphTensor x0 = concat(parts, 1);
  return shape_.stacked ? x0.split_dims(1, shape_.dim) : x0;
}

GraphTensor bag_concat(const GraphTensor& x, const std::vector<GraphTensor>& tables,
                       const std::vector<GraphTensor>& indices, const std::vector<GraphTensor>& offsets,
                       nn::BagMode mode, bool stacked) {
  if (x.rank() != 2 || tables.empty() || tables.size() != indices.size() || tables.size() != offsets.size())
    throw std::invalid_argument(fmt::format("[bag_concat] x {} with {} tables, {} indices, {} offsets",
                                            shape_string(x.dims()), tables.size(), indices.size(), offsets.size()));
  BagConcatShape s;
  const auto d = x.dims()[1].as_const();
  if (!d) throw std::invalid_argument("[bag_concat] x's width must be a number");
  s.dim = *d, s.mode = mode, s.dtype = x.dtype, s.index_dtype = indices[0].dtype, s.stacked = stacked;
  std::vector<GraphTensor> in{x};
  for (size_t k = 0; k < tables.size(); ++k) {
    check_embedding_bag_inputs(tables[k], indices[k], offsets[k]);
    const auto rows = tables[k].dims()[0].as_const();
    if (!rows || tables[k].dims()[1].as_const() != s.dim || tables[k].dtype != s.dtype ||
        indices[k].dtype != s.index_dtype)
      throw std::invalid_argument(fmt::format("[bag_concat] table {} is {} {} with {} indices; expected [rows, {}] {} "
                                              "with {} indices", k, dtype_name(tables[k].dtype),
                                              shape_string(tables[k].dims()), dtype_name(indices[k].dtype), s.dim,
                                              dtype_name(s.dtype), dtype_name(s.index_dtype)));
    s.rows.push_back(*rows);
    in.insert(in.end(), {tables[k], indices[k], offsets[k]});
  }
  return custom_op(std::make_shared<BagConcat>(s), in);
}

}  // namespace luminal::custom
