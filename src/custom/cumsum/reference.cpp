// Cumsum's checks and reference decomposition (Hillis-Steele shifted adds).
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "custom/cumsum/op.h"

namespace luminal::custom {

GraphTensor Cumsum::decompose(Graph& g, const std::vector<GraphTensor>& inputs) const {
  (void)g;
  if (inputs.size() != 1) throw std::invalid_argument(fmt::format("[cumsum] {} inputs, expected 1", inputs.size()));
  GraphTensor x = inputs[0];
  const int64_t len = x.dims().at(size_t(axis_)).as_const().value();
  for (int64_t s = 1; s < len; s *= 2) x = x + x.slice(axis_, 0, len - s).pad(axis_, s, 0);
  return x;
}

GraphTensor cumsum(const GraphTensor& x, int axis) {
  if (x.dtype != DType::I32 && x.dtype != DType::I64 && x.dtype != DType::F32)
    throw std::invalid_argument(fmt::format("[cumsum] x is {}, expected i32, i64 or f32", dtype_name(x.dtype)));
  if (axis < 0 || axis >= x.rank() || !x.dims()[size_t(axis)].as_const())
    throw std::invalid_argument(fmt::format("[cumsum] axis {} of {} must exist and have a concrete length", axis,
                                            shape_string(x.dims())));
  return custom_op(std::make_shared<Cumsum>(axis), {x});
}

}  // namespace luminal::custom
