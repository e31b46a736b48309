// nn::EmbeddingBag (uniform bags), jagged bags from ordinary ops, and row gather/scatter helpers.
#include <memory>
#include <stdexcept>

#include <fmt/format.h>

#include "luminal/nn.h"

namespace luminal::nn {

EmbeddingBag::EmbeddingBag(Graph& g, const std::string& name, Expr vocab, Expr dim, BagMode mode,
                           DType dt)
    : weight(g.named_tensor(name, {vocab, dim}, dt).persist()), mode(mode) {}

// [B * bag] indices -> gathered rows [B * bag, dim] -> [B, bag, dim] -> reduce over the bag.
GraphTensor EmbeddingBag::operator()(const GraphTensor& indices, Expr bag) const {
  if (indices.rank() != 1) {
    throw std::invalid_argument(fmt::format(
        "[embedding_bag] indices must be 1-D [batch * bag], got {}", shape_string(indices.dims())));
  }
  GraphTensor rows = weight.gather(indices).split_dims(0, bag);
  return mode == BagMode::Sum ? rows.sum(1) : rows.mean(1);
}

// mask[b, j] = offsets[b] <= j && !(b has an end && end_b <= j): bag b's rows as a 0/1 matrix, so
// the bags are one matmul. end_b = offsets[b + 1]; the last of open offsets has none (it ends at
// nnz), closed offsets carry it as their last entry.
GraphTensor jagged_bag(const GraphTensor& rows, const GraphTensor& offsets, BagMode mode, bool closed) {
  if (rows.rank() != 2 || offsets.rank() != 1 || !is_integer(offsets.dtype)) {
    throw std::invalid_argument(fmt::format(
        "[embedding_bag] rows must be [nnz, d] and offsets an integer [batch{}], got {} and {} {}",
        closed ? " + 1" : "", shape_string(rows.dims()), dtype_name(offsets.dtype),
        shape_string(offsets.dims())));
  }
  Graph& g = *rows.graph;
  const Expr nnz = rows.dims()[0], batch = offsets.dims()[0] - Expr(closed ? 1 : 0);
  const GraphTensor j = g.arange(nnz, offsets.dtype).expand_dim(0, batch);  // [B, nnz]
  const GraphTensor start = offsets.slice(0, 0, batch).expand_dim(1, nnz);
  const GraphTensor started = j.ge(start).cast(DType::F32);
  GraphTensor ended;
  if (closed) {
    ended = j.ge(offsets.slice(0, 1, batch + Expr(1)).expand_dim(1, nnz)).cast(DType::F32);
  } else {
    const GraphTensor next = offsets.slice(0, 1, batch).pad(0, 0, 1).expand_dim(1, nnz);
    const GraphTensor not_last =
        g.constant(1.0).expand_dim(0, batch - 1).pad(0, 0, 1).expand_dim(1, nnz);
    ended = j.ge(next).cast(DType::F32) * not_last;
  }
  const GraphTensor mask = started - started * ended;  // [B, nnz] of 0/1
  GraphTensor out = mask.cast(rows.dtype).matmul(rows);
  if (mode == BagMode::Sum) return out;
  // PyTorch's mean of an empty bag is 0: divide by max(count, 1).
  const GraphTensor count = mask.sum(1).maximum(g.constant(1.0).expand_dim(0, batch));
  const GraphTensor denom = count.expand_dim(1, rows.dims()[1]);
  return (out.cast(DType::F32) / denom).cast(rows.dtype);
}

GraphTensor indices_outside_bags_zeroed(const GraphTensor& indices, const GraphTensor& offsets) {
  Graph& g = *indices.graph;
  const Expr nnz = indices.dims()[0], last = offsets.dims()[0] - Expr(1);
  const GraphTensor j = g.arange(nnz, indices.dtype);
  const GraphTensor lo = offsets.slice(0, 0, 1).reshape({}).expand_dim(0, nnz);
  const GraphTensor hi = offsets.slice(0, last, last + Expr(1)).reshape({}).expand_dim(0, nnz);
  const GraphTensor inside = (j.ge(lo).cast(DType::F32) * j.lt(hi).cast(DType::F32)).cast(indices.dtype);
  return indices * inside;
}

GraphTensor gather_rows(const GraphTensor& table, const GraphTensor& idx) {
  return table.gather(idx);
}

GraphTensor scatter_rows(const GraphTensor& dest, const GraphTensor& idx, const GraphTensor& src) {
  return dest.scatter(idx, src);
}

}  // namespace luminal::nn
