// Scans: cumsum and diff (Llama's mask and packed-sequence helpers run both on int64 position
// ids and attention masks).
#include <fmt/format.h>

#include "custom/cumsum/op.h"
#include "frontend/aten/operands.h"
#include "frontend/aten/shape_util.h"

namespace luminal::aten {

// cumsum(self, dim, dtype=None) in the exported result dtype (ints and bools sum in i64; f16 /
// bf16 accumulate in f32, as torch does).
void lower_cumsum(AtenNode& n) {
  const DType dt = n.out_dtype();
  const GraphTensor self = n.tensor("self");
  GraphTensor x = self.dtype == dt ? self : self.cast(dt);
  if (x.rank() == 0) return n.set_output(x);
  if (dt == DType::F16 || dt == DType::BF16) x = x.cast(DType::F32);
  const int a = norm_dim(n, n.int_("dim"), x.rank());
  // One Cumsum node (a sequential scan where the backend has its kernel), any length.
  const GraphTensor r = custom::cumsum(x, a);
  n.set_output(r.dtype == dt ? r : r.cast(dt));
}

// diff(self, n=1, dim=-1, prepend=None, append=None): out[i] = x[i + 1] - x[i] along dim, n
// times, after joining prepend / append; bools give x[i + 1] != x[i] (torch's logical_xor).
void lower_diff(AtenNode& n) {
  GraphTensor x = n.tensor("self");
  if (x.rank() == 0) n.fail("diff needs at least one dim");
  const int a = norm_dim(n, n.int_("dim", -1), x.rank());
  const int64_t times = n.int_("n", 1);
  if (times < 0) n.fail(fmt::format("n must be non-negative, got {}", times));
  std::vector<GraphTensor> parts;
  for (const char* name : {"prepend", "append"}) {
    if (!n.has(name)) continue;
    GraphTensor p = n.tensor(name);
    if (p.dtype != x.dtype)
      n.fail(fmt::format("{} is {}, self is {}", name, dtype_name(p.dtype), dtype_name(x.dtype)));
    if (p.rank() == 0) {  // a scalar is broadcast to size 1 along dim
      std::vector<Expr> d = x.dims();
      d[a] = 1;
      p = p.expand_to(d);
    }
    parts.push_back(p);
  }
  if (n.has("prepend")) x = concat({parts.front(), x}, a);
  if (n.has("append")) x = concat({x, parts.back()}, a);
  for (int64_t k = 0; k < times; ++k) {
    const Expr len = x.dims()[a];
    if (len.as_const() == 0) break;
    const GraphTensor hi = x.slice(a, 1, len), lo = x.slice(a, 0, len - 1);
    x = x.dtype == DType::Bool ? hi.ne(lo) : hi - lo;
  }
  n.set_output(x);
}

}  // namespace luminal::aten
