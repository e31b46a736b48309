// aten.item and the splits it sizes. torch.export records KeyedJaggedTensor.to_dict as
//   u_k = item(lengths.view(K, B).sum(1)[k]);  split_with_sizes(values, [u_0, .., u_{K-1}])
// and each key's embedding_bag reads its piece with offsets relative to the piece. luminal has no
// data-dependent shapes: an item() becomes a 0-d graph tensor behind its symbol, a piece becomes
// a Segment (base, start = u_0 + .. + u_{k-1}), and the bag reads the whole values with its
// offsets moved by start and closed by the piece's end. No host sync, and a CUDA graph of the
// program stays valid for any lengths.
#include <fmt/format.h>

#include "frontend/aten/jagged.h"
#include "frontend/aten/shape_util.h"
#include "frontend/aten/sym_expr.h"

namespace luminal::aten {

namespace {

bool is_data_symbol(AtenNode& n, const std::string& sym) { return n.data_scalars().count(sym) != 0; }

// e as a 0-d I64 graph tensor: e must be c + sum a_i u_i over data symbols u_i (what a split of
// jagged values needs: sums of lengths); anything else is refused.
GraphTensor data_expr_tensor(AtenNode& n, const Expr& e) {
  std::vector<std::string> syms = e.symbols();
  DynMap zero;
  for (const std::string& s : syms) {
    if (!is_data_symbol(n, s))
      n.fail(fmt::format("size {} mixes a value read from data with the size '{}' (only sums of "
                         "values read from data are supported)", e.to_string(), s));
    zero[s] = 0;
  }
  const int64_t c = e.eval(zero);
  Graph& g = n.graph();
  GraphTensor t = g.constant(double(c), DType::I64);
  DynMap probe = zero;
  int64_t want = c;
  for (size_t i = 0; i < syms.size(); ++i) {
    DynMap unit = zero;
    unit[syms[i]] = 1;
    const int64_t a = e.eval(unit) - c;
    probe[syms[i]] = int64_t(i) + 2;
    want += a * (int64_t(i) + 2);
    if (a != 0) t = t + n.data_scalars()[syms[i]] * double(a);
  }
  if (e.eval(probe) != want)
    n.fail(fmt::format("size {} is not a sum of values read from data (only sums are supported)", e.to_string()));
  return t;
}

}  // namespace

// item(self): a one-element integer tensor's value. Its symbol (u0) stands for a 0-d graph tensor
// that split_with_sizes and embedding_bag read; anything that needs it as a size is refused there.
void lower_item(AtenNode& n) {
  const GraphTensor t = n.tensor("self");
  if (!is_integer(t.dtype))
    n.fail(fmt::format("item() of a {} tensor: a value read from data is supported only as an integer "
                       "size (KeyedJaggedTensor lengths)", dtype_name(t.dtype)));
  for (const Expr& d : t.dims())
    if (d.as_const() != 1) n.fail(fmt::format("item() of a tensor of shape {}", shape_string(t.dims())));
  const std::string recorded = n.out_symbol();
  const std::vector<std::string> syms = recorded.empty() ? std::vector<std::string>{} : parse_sym_expr(recorded).symbols();
  if (syms.size() != 1)
    n.fail(fmt::format("torch.export recorded '{}' for the value (expected one unbacked symbol such as u0)", recorded));
  const std::string& sym = syms[0];
  n.data_scalars()[sym] = t.reshape({}).cast(DType::I64);
  n.set_sym_int(Expr::sym(sym));
}

bool mentions_data(AtenNode& n, const std::vector<Expr>& sizes) {
  for (const Expr& e : sizes)
    for (const std::string& s : e.symbols())
      if (is_data_symbol(n, s)) return true;
  return false;
}

void split_by_data(AtenNode& n, const GraphTensor& t, int dim, const std::vector<Expr>& sizes) {
  if (t.rank() != 1 || dim != 0)
    n.fail(fmt::format("a split by sizes read from data is supported for 1-D tensors (jagged values); "
                       "got shape {} along dim {}", shape_string(t.dims()), dim));
  std::string base;
  for (const Pt2NamedArgument& a : n.node().inputs)
    if (a.name == "self" && !a.arg.values.empty()) base = a.arg.values[0].str;
  // Each piece's end as a running sum (one add per piece), then torch's assertion that the sizes
  // sum to len(values), checked without a host sync: on a mismatch every bound moves past
  // len(values), which the bag kernels report as bad offsets.
  std::vector<GraphTensor> ends;
  for (const Expr& s : sizes) {
    const GraphTensor size = data_expr_tensor(n, s);
    ends.push_back(ends.empty() ? size : ends.back() + size);
  }
  Graph& g = n.graph();
  const Expr nnz = t.dims()[0];
  const GraphTensor len = g.arange(nnz + Expr(1), DType::I64).slice(0, nnz, nnz + Expr(1)).reshape({});
  const GraphTensor poison = ends.back().ne(len).cast(DType::I64) * (len + 1.0);
  std::vector<Segment> out;
  GraphTensor start = poison;
  for (const GraphTensor& end : ends) {
    out.push_back(Segment{t, start, end + poison, base});
    start = out.back().end;
  }
  n.set_segment_list(out);
}

GraphTensor segment_offsets(const Segment& s, const GraphTensor& offsets, bool include_last_offset, DType dtype) {
  const GraphTensor off = offsets.cast(DType::I64);
  GraphTensor bounds = off + s.start.expand_dim(0, off.dims()[0]);
  if (!include_last_offset) bounds = concat({bounds, s.end.reshape({1})}, 0);
  return bounds.cast(dtype);
}

}  // namespace luminal::aten
