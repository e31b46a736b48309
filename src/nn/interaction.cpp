// nn::dot_interaction: DLRM's pairwise dot products of the bottom output and the pooled bags.
#include <stdexcept>

#include <fmt/format.h>

#include "luminal/nn.h"

namespace luminal::nn {

// Row i of the strictly-lower triangle, Z[:, i, 0:i], is contiguous in the row-major pair order
// (1,0), (2,0), (2,1), ... (and row i of the upper one, Z[:, i, i+1:n], in (0,1), (0,2), ...), so
// n - 1 slices give every pair in order.
GraphTensor dot_interaction(const GraphTensor& x, const std::vector<GraphTensor>& ly, PairOrder order) {
  if (x.rank() != 2) {
    throw std::invalid_argument(
        fmt::format("[dot_interaction] x must be [batch, d], got {}", shape_string(x.dims())));
  }
  const Expr batch = x.dims()[0], d = x.dims()[1];
  std::vector<GraphTensor> feats{x};
  for (size_t k = 0; k < ly.size(); ++k) {
    if (ly[k].rank() != 2 || !ly[k].dims()[0].same(batch) || !ly[k].dims()[1].same(d)) {
      throw std::invalid_argument(fmt::format("[dot_interaction] ly[{}] is {}, expected {}", k,
                                              shape_string(ly[k].dims()), shape_string(x.dims())));
    }
    feats.push_back(ly[k]);
  }
  const int n = static_cast<int>(feats.size());
  const GraphTensor t = concat(feats, 1).split_dims(1, d);  // [B, n, d]
  const GraphTensor z = t.matmul(t.transpose(1, 2));        // [B, n, n]
  std::vector<GraphTensor> parts{x};
  for (int i = 1; i < n; ++i) {
    const int row = order == PairOrder::Lower ? i : i - 1;
    const GraphTensor zr = z.slice(1, row, row + 1);
    parts.push_back((order == PairOrder::Lower ? zr.slice(2, 0, i) : zr.slice(2, i, n)).merge_dims(1));
  }
  return concat(parts, 1);
}

}  // namespace luminal::nn

namespace luminal::nn {

GraphTensor low_rank_cross(const GraphTensor& x0, const GraphTensor& x, const GraphTensor& v,
                           const GraphTensor& w, const GraphTensor& b) {
  if (x0.rank() != 2 || x.rank() != 2 || !x0.dims()[1].same(x.dims()[1])) {
    throw std::invalid_argument(fmt::format("[low_rank_cross] x0 {} and x {} must be [batch, n] alike",
                                            shape_string(x0.dims()), shape_string(x.dims())));
  }
  const GraphTensor xv = x.matmul(v.transpose(0, 1));  // [B, rank]: V has no bias
  return x0 * linear(xv, w, b) + x;
}

}  // namespace luminal::nn
