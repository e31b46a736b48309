// Gather and Scatter over rows (axis 0).
#include <stdexcept>

#include <fmt/format.h>

#include "core/tensor/helpers.h"

namespace luminal {

namespace {

void require_index(std::string_view op, const GraphTensor& idx) {
  if (idx.dtype != DType::I32 && idx.dtype != DType::I64) {
    throw std::invalid_argument(
        fmt::format("[{}] indices must be i32 or i64, got {}", op, dtype_name(idx.dtype)));
  }
}

void require_rows(std::string_view op, const GraphTensor& t, std::string_view what) {
  if (t.rank() < 1) {
    throw std::invalid_argument(fmt::format("[{}] {} must have at least one dim (rows)", op, what));
  }
}

}  // namespace

GraphTensor GraphTensor::gather(const GraphTensor& idx) const {
  detail::check_same_graph("gather", *this, idx);
  require_index("gather", idx);
  require_rows("gather", *this, "data");
  std::vector<Expr> shape = idx.dims();
  shape.insert(shape.end(), dims().begin() + 1, dims().end());
  return detail::make_node(OpKind::Gather, dtype, {*this, idx}, std::move(shape));
}

GraphTensor GraphTensor::scatter(const GraphTensor& idx, const GraphTensor& src) const {
  detail::check_same_graph("scatter", *this, idx);
  detail::check_same_graph("scatter", *this, src);
  require_index("scatter", idx);
  require_rows("scatter", *this, "destination");
  detail::check_same_dtype("scatter", *this, src);
  if (idx.rank() != 1) {
    throw std::invalid_argument(
        fmt::format("[scatter] indices must be 1-D, got {}", shape_string(idx.dims())));
  }
  bool ok = src.rank() == rank() && src.dims()[0].same(idx.dims()[0]);
  for (int i = 1; ok && i < rank(); ++i) ok = src.dims()[i].same(dims()[i]);
  if (!ok) {
    throw std::invalid_argument(
        fmt::format("[scatter] source {} must be [indices {}] + destination row dims of {}",
                    shape_string(src.dims()), shape_string(idx.dims()), shape_string(dims())));
  }
  return detail::make_node(OpKind::Scatter, dtype, {*this, idx, src}, dims());
}

}  // namespace luminal
