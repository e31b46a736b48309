// EmbeddingBag's input checks and reference decomposition: the gathered rows, then nn::jagged_bag
// (a bag-membership mask times the rows), so the op gives what the translator built before it.
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "custom/embedding_bag/op.h"

namespace luminal::custom {

namespace {

[[noreturn]] void fail(const std::string& what, const GraphTensor& t, const std::string& want) {
  throw std::invalid_argument(fmt::format("[embedding_bag] {} is {} {}, expected {}", what,
                                          dtype_name(t.dtype), shape_string(t.dims()), want));
}

}  // namespace

void check_embedding_bag_inputs(const GraphTensor& table, const GraphTensor& indices,
                                const GraphTensor& offsets) {
  const DType td = table.dtype, id = indices.dtype;
  if (table.rank() != 2 || (td != DType::F32 && td != DType::BF16 && td != DType::F16))
    fail("table", table, "a 2-D [V, d] f32, bf16 or f16 tensor");
  if (indices.rank() != 1 || (id != DType::I32 && id != DType::I64))
    fail("indices", indices, "a 1-D [nnz] i32 or i64 tensor");
  if (offsets.rank() != 1 || offsets.dtype != id)
    fail("offsets", offsets,
         fmt::format("a 1-D [B] {} tensor (the indices' dtype)", dtype_name(id)));
}

namespace {

void check_weights(const GraphTensor& table, const GraphTensor& indices, const GraphTensor& w, nn::BagMode mode) {
  if (w.rank() != 1 || w.dtype != table.dtype || !w.dims()[0].same(indices.dims()[0]))
    fail("per_sample_weights", w, fmt::format("a 1-D [{}] {} tensor (the indices' length, the table's dtype)",
                                              indices.dims()[0].to_string(), dtype_name(table.dtype)));
  if (mode != nn::BagMode::Sum) throw std::invalid_argument("[embedding_bag] per_sample_weights need sum mode (as PyTorch)");
}

}  // namespace

GraphTensor EmbeddingBag::decompose(Graph& g, const std::vector<GraphTensor>& inputs) const {
  (void)g;
  const size_t want = weighted_ ? 4 : 3;
  if (inputs.size() != want)
    throw std::invalid_argument(fmt::format("[embedding_bag] {} inputs, expected {} (table, indices, offsets{})",
                                            inputs.size(), want, weighted_ ? ", per_sample_weights" : ""));
  check_embedding_bag_inputs(inputs[0], inputs[1], inputs[2]);
  const GraphTensor indices = closed_ ? nn::indices_outside_bags_zeroed(inputs[1], inputs[2]) : inputs[1];
  GraphTensor rows = nn::gather_rows(inputs[0], indices);
  if (!weighted_) return nn::jagged_bag(rows, inputs[2], mode_, closed_);
  check_weights(inputs[0], inputs[1], inputs[3], mode_);
  // Weighted rows in fp32 (the kernels accumulate in fp32), the bag rounded to the table's dtype once.
  const DType dt = rows.dtype;
  rows = rows.cast(DType::F32) * inputs[3].cast(DType::F32).expand_dim(1, inputs[0].dims()[1]);
  const GraphTensor bag = nn::jagged_bag(rows, inputs[2], mode_, closed_);
  return dt == DType::F32 ? bag : bag.cast(dt);
}

GraphTensor embedding_bag(const GraphTensor& table, const GraphTensor& indices,
                          const GraphTensor& offsets, nn::BagMode mode, bool closed,
                          const GraphTensor& per_sample_weights) {
  check_embedding_bag_inputs(table, indices, offsets);
  if (per_sample_weights.graph == nullptr)
    return custom_op(std::make_shared<EmbeddingBag>(mode, closed), {table, indices, offsets});
  check_weights(table, indices, per_sample_weights, mode);
  return custom_op(std::make_shared<EmbeddingBag>(mode, closed, /*weighted=*/true),
                   {table, indices, offsets, per_sample_weights});
}

}  // namespace luminal::custom
