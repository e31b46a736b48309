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

GraphTensor EmbeddingBag::decompose(Graph& g, const std::vector<GraphTensor>& inputs) const {
  (void)g;
  if (inputs.size() != 3)
    throw std::invalid_argument(fmt::format(
        "[embedding_bag] {} inputs, expected 3 (table, indices, offsets)", inputs.size()));
  check_embedding_bag_inputs(inputs[0], inputs[1], inputs[2]);
  const GraphTensor indices = closed_ ? nn::indices_outside_bags_zeroed(inputs[1], inputs[2]) : inputs[1];
  return nn::jagged_bag(nn::gather_rows(inputs[0], indices), inputs[2], mode_, closed_);
}

GraphTensor embedding_bag(const GraphTensor& table, const GraphTensor& indices,
                          const GraphTensor& offsets, nn::BagMode mode, bool closed) {
  check_embedding_bag_inputs(table, indices, offsets);
  return custom_op(std::make_shared<EmbeddingBag>(mode, closed), {table, indices, offsets});
}

}  // namespace luminal::custom
