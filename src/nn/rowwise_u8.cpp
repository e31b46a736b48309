// Row-wise 8-bit embedding tables (FBGEMM's layout): one scale and bias per row.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "luminal/nn.h"

namespace luminal::nn {

float RowwiseU8Table::value(int64_t r, int64_t j) const {
  const size_t i = static_cast<size_t>(r * dim + j);
  return static_cast<float>(codes[i]) * scale_bias[2 * r] + scale_bias[2 * r + 1];
}

RowwiseU8Table quantize_rowwise_u8(std::span<const float> table, int64_t rows, int64_t dim) {
  if (rows < 0 || dim <= 0 || table.size() != static_cast<size_t>(rows * dim)) {
    throw std::invalid_argument(
        fmt::format("[quantize] table of {} values is not [{}, {}]", table.size(), rows, dim));
  }
  RowwiseU8Table q{rows, dim, std::vector<uint8_t>(table.size()), std::vector<float>(2 * rows)};
  for (int64_t r = 0; r < rows; ++r) {
    const std::span<const float> row = table.subspan(static_cast<size_t>(r * dim), dim);
    const auto [lo, hi] = std::minmax_element(row.begin(), row.end());
    if (!std::isfinite(*lo) || !std::isfinite(*hi)) {
      throw std::invalid_argument(fmt::format("[quantize] row {} has a non-finite value", r));
    }
    const float scale = (*hi - *lo) / 255.0f;
    // A constant row: scale 0, every code 0, the value is the bias exactly.
    const float inv = scale > 0 ? 1.0f / scale : 0.0f;
    for (int64_t j = 0; j < dim; ++j) {
      const float c = std::nearbyint((row[j] - *lo) * inv);
      q.codes[r * dim + j] = static_cast<uint8_t>(std::clamp(c, 0.0f, 255.0f));
    }
    q.scale_bias[2 * r] = scale;
    q.scale_bias[2 * r + 1] = *lo;
  }
  return q;
}

GraphTensor gather_rowwise_u8(const GraphTensor& codes, const GraphTensor& scale_bias, const GraphTensor& indices) {
  const GraphTensor rows = codes.gather(indices).cast(DType::F32);
  const GraphTensor sb = scale_bias.gather(indices);  // [n, 2]
  const std::vector<Expr> shape = rows.dims();
  return rows * sb.slice(1, 0, 1).expand_to(shape) + sb.slice(1, 1, 2).expand_to(shape);
}

}  // namespace luminal::nn
