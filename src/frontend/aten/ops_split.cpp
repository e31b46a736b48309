// Splits into views: split.Tensor, split_with_sizes, chunk, unbind (Tensor[] results) and
// unflatten. Every piece is a slice of the input's view; nothing is copied. The number of pieces
// comes from the exported Tensor[] (its length is fixed at export even when the dim is symbolic).
#include <fmt/format.h>

#include "frontend/aten/jagged.h"
#include "frontend/aten/shape_util.h"

namespace luminal::aten {

namespace {

size_t pieces(const AtenNode& n) {
  if (n.num_outputs() != 1 || n.node().outputs[0].kind != "tensors")
    n.fail("does not return a Tensor[]");
  return n.node().outputs[0].values.size();
}

// Slices of `sizes` along dim; the last one ends at the dim's size (clamped like torch.split).
void set_slices(AtenNode& n, const GraphTensor& t, int dim, const std::vector<Expr>& sizes) {
  std::vector<GraphTensor> out;
  Expr start = 0;
  const Expr& len = t.dims()[dim];
  for (const Expr& s : sizes) {
    const Expr end = min(start + s, len);
    out.push_back(t.slice(dim, start, end));
    start = end;
  }
  n.set_tensor_list(out);
}

// k pieces of `size` (the last possibly shorter): split.Tensor and chunk.
void split_even(AtenNode& n, const Expr& size) {
  const GraphTensor t = n.tensor("self");
  const int dim = norm_dim(n, n.int_("dim", 0), t.rank());
  set_slices(n, t, dim, std::vector<Expr>(pieces(n), size));
}

}  // namespace

// split(self, split_size, dim=0).
void lower_split(AtenNode& n) { split_even(n, n.sym_int("split_size")); }

// split_with_sizes(self, split_sizes, dim=0).
void lower_split_with_sizes(AtenNode& n) {
  const GraphTensor t = n.tensor("self");
  const int dim = norm_dim(n, n.int_("dim", 0), t.rank());
  const std::vector<Expr> sizes = n.sym_ints("split_sizes");
  if (sizes.size() != pieces(n))
    n.fail(fmt::format("{} split sizes for {} outputs", sizes.size(), pieces(n)));
  if (mentions_data(n, sizes)) return split_by_data(n, t, dim, sizes);
  set_slices(n, t, dim, sizes);
}

// chunk(self, chunks, dim=0): pieces of ceil(size / chunks).
void lower_chunk(AtenNode& n) {
  const GraphTensor t = n.tensor("self");
  const int dim = norm_dim(n, n.int_("dim", 0), t.rank());
  const int64_t chunks = n.int_("chunks");
  if (chunks <= 0) n.fail(fmt::format("chunks must be positive, got {}", chunks));
  split_even(n, (t.dims()[dim] + Expr(chunks - 1)) / Expr(chunks));
}

// unbind(self, dim=0): one view per index, without the dim.
void lower_unbind(AtenNode& n) {
  const GraphTensor t = n.tensor("self");
  const int dim = norm_dim(n, n.int_("dim", 0), t.rank());
  std::vector<GraphTensor> out;
  for (size_t i = 0; i < pieces(n); ++i) {
    const Expr at(static_cast<int64_t>(i));
    out.push_back(drop_unit_dim(t.slice(dim, at, at + Expr(1)), dim));
  }
  n.set_tensor_list(out);
}

// unflatten(self, dim, sizes): a reshape to the exported dims.
void lower_unflatten(AtenNode& n) { n.set_output(reshape_to(n.tensor("self"), n.out_dims())); }

}  // namespace luminal::aten
