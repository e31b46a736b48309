// index.Tensor: advanced indexing with a list of optional index tensors (None = the whole dim),
// e.g. DLRM's Z[:, li, lj]. The indexed dims are moved to the front and merged, the index
// tensors folded into one flat row index, and the rows gathered.
#include <fmt/format.h>

#include "frontend/aten/operands.h"
#include "frontend/aten/shape_util.h"

namespace luminal::aten {

namespace {

// Broadcasts every index tensor to one shape (numpy rules) in I64.
std::vector<GraphTensor> broadcast_indices(AtenNode& n, const std::vector<GraphTensor>& idx) {
  size_t rank = 0;
  for (const GraphTensor& t : idx) rank = std::max(rank, t.dims().size());
  std::vector<Expr> shape(rank, Expr(1));
  for (const GraphTensor& t : idx) {
    for (size_t i = 0; i < t.dims().size(); ++i) {
      Expr& s = shape[rank - t.dims().size() + i];
      const Expr& d = t.dims()[i];
      if (s.as_const() == 1) {
        s = d;
      } else if (!(d.as_const() == 1 || d.same(s))) {
        n.fail(fmt::format("index shapes do not broadcast ({} vs {})", shape_string(t.dims()),
                           shape_string(shape)));
      }
    }
  }
  std::vector<GraphTensor> out;
  for (const GraphTensor& t : idx)
    out.push_back((t.dtype == DType::I64 ? t : t.cast(DType::I64)).expand_to(shape));
  return out;
}

}  // namespace

void lower_index(AtenNode& n) {
  const GraphTensor self = n.tensor("self");
  const std::vector<std::optional<GraphTensor>> spec = n.opt_tensors("indices");
  if (spec.size() > size_t(self.rank()))
    n.fail(fmt::format("{} indices for a tensor of rank {}", spec.size(), self.rank()));
  std::vector<int> axes;  // indexed dims, in order
  std::vector<GraphTensor> idx;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (!spec[i]) continue;
    if (spec[i]->dtype == DType::Bool)
      n.fail("boolean mask indices (data-dependent shapes) are not supported");
    if (!is_integer(spec[i]->dtype))
      n.fail(
          fmt::format("index {} is {}, expected an integer tensor", i, dtype_name(spec[i]->dtype)));
    axes.push_back(static_cast<int>(i));
    idx.push_back(*spec[i]);
  }
  if (axes.empty()) return n.set_output(self);
  for (size_t k = 1; k < axes.size(); ++k)
    if (axes[k] != axes[k - 1] + 1) n.fail("index tensors separated by a slice are not supported");
  idx = broadcast_indices(n, idx);

  // Flat row index over the indexed dims (row-major), negative indices counted from the end.
  // A symbolic size (a dynamic sequence) is computed from the sizes (sym_int_tensor).
  GraphTensor flat;
  for (size_t k = 0; k < axes.size(); ++k) {
    const GraphTensor size = sym_int_tensor(n.graph(), self.dims()[axes[k]], DType::I64);
    const GraphTensor i = idx[k] + idx[k].lt(0.0).cast(DType::I64) * size;
    flat = k == 0 ? i : flat * size + i;
  }

  // self with the indexed dims first, merged into one: [prod(indexed), rest...].
  std::vector<int> order(axes.begin(), axes.end());
  for (int a = 0; a < self.rank(); ++a)
    if (a < axes.front() || a > axes.back()) order.push_back(a);
  GraphTensor data = self.permute(order);
  for (size_t k = 1; k < axes.size(); ++k) data = data.merge_dims(0);
  GraphTensor rows = data.gather(flat);  // [idx shape..., rest...]

  // Put the index dims where the first indexed dim was.
  const int ni = static_cast<int>(flat.rank()), lead = axes.front();
  const int rest = rows.rank() - ni;
  std::vector<int> back;
  for (int a = 0; a < lead; ++a) back.push_back(ni + a);
  for (int a = 0; a < ni; ++a) back.push_back(a);
  for (int a = lead; a < rest; ++a) back.push_back(ni + a);
  n.set_output(rows.permute(back));
}

}  // namespace luminal::aten
