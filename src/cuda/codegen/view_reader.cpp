// KernelWriter's value side: computing inlined nodes and reading inputs through their views.
//
// A view maps a logical index i to offset + sum((i_d - pad_lo_d) * stride_d) in the producer's
// row-major buffer, reading 0 in padding. A materialized producer is loaded at that offset. An
// inlined producer needs its own logical index instead: when the view is a permutation / broadcast /
// slice / pad / split of the producer's dims, each producer coordinate is one view coordinate plus
// a start ("aligned"); otherwise the flat offset is unflattened with div/mod (always correct).
// In padding, an inlined producer is not evaluated at all (an `if` around it; Constant and Iota are
// read at an index clamped to 0 instead), so inlined reads never go out of bounds. An Add of padded
// reads that is a concat becomes a select of one part (concat_select.cpp).
#include <stdexcept>

#include <fmt/format.h>

#include "cuda/codegen/dtype_code.h"
#include "cuda/codegen/kernel_writer.h"

namespace luminal::cuda::codegen {

namespace {

bool is_const(const Expr& e, int64_t v) { return e.as_const() == v; }

const Expr& at_or_zero(const std::vector<Expr>& v, size_t d) {
  static const Expr kZero = 0;
  return d < v.size() ? v[d] : kZero;
}

bool padded(const ShapeTracker& v, size_t d) {
  return !is_const(at_or_zero(v.pad_lo, d), 0) || !is_const(at_or_zero(v.pad_hi, d), 0);
}

// True when s is one parenthesized group: "(a + b)" but not "(a) + (b)".
bool wrapped(const std::string& s) {
  if (s.size() < 2 || s.front() != '(' || s.back() != ')') return false;
  int depth = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    depth += s[i] == '(' ? 1 : s[i] == ')' ? -1 : 0;
    if (depth == 0 && i + 1 < s.size()) return false;
  }
  return true;
}


std::vector<Expr> contiguous_strides(const std::vector<Expr>& dims) {
  std::vector<Expr> cs(dims.size(), Expr(1));
  Expr acc = 1;
  for (size_t i = dims.size(); i-- > 0;) {
    cs[i] = acc;
    acc = acc * dims[i];
  }
  return cs;
}

}  // namespace

std::string paren(const std::string& s) { return is_atom(s) || wrapped(s) ? s : "(" + s + ")"; }

std::string KernelWriter::flatten(const Index& idx, const std::vector<Expr>& dims) {
  // An index that came from unflatten() over the same dims flattens back to its source.
  const std::string memo = fmt::format("flat|{}|{}", fmt::join(idx, ","), shape_string(dims));
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    if (auto f = it->find(memo); f != it->end()) return f->second;
  }
  const std::vector<Expr> cs = contiguous_strides(dims);
  std::vector<std::string> terms;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (is_const(dims[d], 1) || idx[d] == "0") continue;
    terms.push_back(is_const(cs[d], 1) ? idx[d] : fmt::format("{} * {}", paren(idx[d]), paren(dim(cs[d]))));
  }
  return terms.empty() ? "0" : fmt::format("{}", fmt::join(terms, " + "));
}

Index KernelWriter::unflatten(const std::string& flat, const std::vector<Expr>& dims,
                              std::string_view prefix) {
  const std::vector<Expr> cs = contiguous_strides(dims);
  Index idx(dims.size(), "0");
  bool outermost = true;  // the outermost non-trivial coordinate needs no modulo
  for (size_t d = 0; d < dims.size(); ++d) {
    if (is_const(dims[d], 1)) continue;
    std::string q = is_const(cs[d], 1) ? flat : fmt::format("{} / {}", paren(flat), paren(dim(cs[d])));
    if (!outermost) q = fmt::format("{} % {}", paren(q), paren(dim(dims[d])));
    outermost = false;
    idx[d] = q == flat && is_atom(flat) ? flat : let("long long", fmt::format("{}{}", prefix, d), q);
  }
  if (is_atom(flat)) scopes_.back()[fmt::format("flat|{}|{}", fmt::join(idx, ","), shape_string(dims))] = flat;
  return idx;
}

std::string KernelWriter::view_offset(const ShapeTracker& v, const Index& idx) {
  if (v.is_contiguous()) return flatten(idx, v.dims);
  std::vector<std::string> terms;
  if (!is_const(v.offset, 0)) terms.push_back(paren(dim(v.offset)));
  for (size_t d = 0; d < v.rank(); ++d) {
    if (is_const(v.strides[d], 0) || (is_const(v.dims[d], 1) && !padded(v, d))) continue;
    std::string pos = idx[d];
    if (const Expr& lo = at_or_zero(v.pad_lo, d); !is_const(lo, 0)) pos = fmt::format("({} - {})", pos, paren(dim(lo)));
    terms.push_back(is_const(v.strides[d], 1) ? pos : fmt::format("{} * {}", paren(pos), paren(dim(v.strides[d]))));
  }
  return terms.empty() ? "0" : fmt::format("{}", fmt::join(terms, " + "));
}

std::string KernelWriter::view_guard(const ShapeTracker& v, const Index& idx) {
  std::vector<std::string> conds;
  for (size_t d = 0; d < v.rank(); ++d) {
    const Expr &lo = at_or_zero(v.pad_lo, d), &hi = at_or_zero(v.pad_hi, d);
    if (!is_const(lo, 0)) conds.push_back(fmt::format("{} >= {}", idx[d], paren(dim(lo))));
    if (!is_const(hi, 0)) conds.push_back(fmt::format("{} < {}", idx[d], paren(dim(v.dims[d] - hi))));
  }
  if (conds.empty()) return "";
  return let("bool", "ok", fmt::format("{}", fmt::join(conds, " && ")));
}

// Strided coordinates of a view (broadcast and unpadded size-1 dims dropped); with `merge`,
// adjacent unpadded coordinates that tile each other (split / merged dims) are joined.
std::vector<KernelWriter::Term> KernelWriter::view_terms(const ShapeTracker& v, const Index& idx, bool merge) {
  std::vector<Term> terms;
  for (size_t d = 0; d < v.rank(); ++d) {
    if (is_const(v.strides[d], 0) || (is_const(v.dims[d], 1) && !padded(v, d))) continue;
    Term t{idx[d], v.dims[d], v.strides[d], padded(v, d)};
    if (t.padded) {
      const Expr& lo = at_or_zero(v.pad_lo, d);
      t.extent = v.dims[d] - lo - at_or_zero(v.pad_hi, d);
      if (!is_const(lo, 0)) t.pos = fmt::format("({} - {})", idx[d], paren(dim(lo)));
    }
    Term* prev = terms.empty() ? nullptr : &terms.back();
    if (merge && prev && !prev->padded && !t.padded && prev->stride.same(t.stride * t.extent)) {
      prev->pos = fmt::format("({} * {} + {})", paren(prev->pos), paren(dim(t.extent)), t.pos);
      prev->extent = prev->extent * t.extent;
      prev->stride = t.stride;
      continue;
    }
    terms.push_back(std::move(t));
  }
  return terms;
}

// Producer coordinates from aligned terms: each term drives the producer dim whose contiguous
// stride equals its stride, starting at that dim's share of a constant offset. False when the
// view is not of that form (or a coordinate could leave its dim, which would mean wrapping).
bool KernelWriter::aligned_index(const ShapeTracker& v, const std::vector<Expr>& pshape,
                                 const std::vector<Term>& terms, const std::string& valid, Index& out) {
  const size_t pr = pshape.size();
  const std::vector<Expr> cs = contiguous_strides(pshape);
  std::vector<int64_t> start(pr, 0);
  if (!is_const(v.offset, 0)) {
    auto off = v.offset.as_const();
    if (!off) return false;
    int64_t rem = *off;
    for (size_t p = 0; p < pr; ++p) {
      if (is_const(pshape[p], 1)) continue;
      auto c = cs[p].as_const();
      if (!c || *c <= 0) return false;
      start[p] = rem / *c;
      rem %= *c;
    }
    if (rem != 0) return false;
  }
  out.assign(pr, "0");
  std::vector<bool> taken(pr, false);
  for (const Term& t : terms) {
    size_t p = 0;
    while (p < pr && (taken[p] || is_const(pshape[p], 1) || !cs[p].same(t.stride))) ++p;
    if (p == pr) return false;
    auto room = (pshape[p] - (t.extent + Expr(start[p]))).as_const();
    if (!room || *room < 0) return false;
    taken[p] = true;
    std::string c = start[p] == 0 ? t.pos : fmt::format("{} + {}", paren(t.pos), start[p]);
    if (t.padded && !valid.empty()) c = fmt::format("{} ? {} : 0", valid, paren(c));
    out[p] = c;
  }
  for (size_t p = 0; p < pr; ++p) {
    if (taken[p] || is_const(pshape[p], 1)) continue;
    auto n = pshape[p].as_const();
    if (start[p] != 0 && (!n || start[p] >= *n)) return false;
    out[p] = std::to_string(start[p]);
  }
  return true;
}

// The producer's logical index for a read through view v at idx (see the file comment).
void KernelWriter::producer_index(const ShapeTracker& v, const std::vector<Expr>& pshape,
                                  const Index& idx, const std::string& valid, Index& out) {
  bool same_dims = v.is_contiguous() && v.rank() == pshape.size();
  for (size_t d = 0; same_dims && d < v.rank(); ++d) same_dims = v.dims[d].same(pshape[d]);
  if (same_dims) {
    out = idx;
    return;
  }
  if (aligned_index(v, pshape, view_terms(v, idx, false), valid, out) ||
      aligned_index(v, pshape, view_terms(v, idx, true), valid, out)) {
    for (std::string& c : out) {
      if (!is_atom(c)) c = let("long long", "x", c);
    }
    return;
  }
  std::string flat = view_offset(v, idx);
  if (!valid.empty()) flat = fmt::format("{} ? {} : 0", valid, paren(flat));
  if (!is_atom(flat)) flat = let("long long", "x", flat);
  out = unflatten(flat, pshape, "p");
}

std::string KernelWriter::read(const NodeInput& in, const Index& idx) {
  const Node& p = g_.node(in.node);
  const ShapeTracker& v = in.view;
  if (v.rank() != idx.size() || v.strides.size() != v.rank()) {
    throw std::logic_error(fmt::format("[codegen] {}: view of %{} has rank {}, index has {}", name_,
                                       in.node, v.rank(), idx.size()));
  }
  const std::string guard = view_guard(v, idx);
  const std::string vt(value_type(p.dtype)), base = fmt::format("v{}", in.node);
  const int b = plan_.buffer_of_node.at(in.node);
  if (b >= 0) {
    const std::string ld = load_code(p.dtype, buffer(b, false), view_offset(v, idx));
    if (guard.empty()) return let(vt, base, ld);
    return let(vt, base, fmt::format("{} ? {} : {}", guard, ld, zero(p.dtype)));
  }
  Index pidx;
  if (guard.empty() || p.kind == OpKind::Constant || p.kind == OpKind::Iota) {
    producer_index(v, p.shape, idx, guard, pidx);
    const std::string val = value(in.node, pidx);
    if (guard.empty()) return val;
    return let(vt, base, fmt::format("{} ? {} : {}", guard, val, zero(p.dtype)));
  }
  // A padded read of an inlined expression evaluates it only where the view is valid: padding
  // costs none of its loads, gathers or index maps. The unclamped index is only used there.
  producer_index(v, p.shape, idx, "", pidx);
  const std::string key = fmt::format("guarded|{}|{}|{}", in.node, guard, fmt::join(pidx, ","));
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    if (auto f = it->find(key); f != it->end()) return f->second;
  }
  const std::string out = fresh(base);
  line(fmt::format("{} {} = {};", vt, out, zero(p.dtype)));
  open(fmt::format("if ({})", guard));
  line(fmt::format("{} = {};", out, value(in.node, pidx)));
  close();
  scopes_.back()[key] = out;
  return out;
}

void KernelWriter::bind_value(NodeId id, const Index& idx, const std::string& v) {
  scopes_.back()[fmt::format("node|{}|{}", id, fmt::join(idx, ","))] = v;
}

std::string KernelWriter::value(NodeId id, const Index& idx) {
  const std::string key = fmt::format("node|{}|{}", id, fmt::join(idx, ","));
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    if (auto f = it->find(key); f != it->end()) return f->second;
  }
  const Node& n = g_.node(id);
  std::string v;
  if (const int b = plan_.buffer_of_node.at(id); b >= 0) {
    v = let(value_type(n.dtype), fmt::format("v{}", id), load_code(n.dtype, buffer(b, false), flatten(idx, n.shape)));
  } else {
    v = compute(id, idx);
  }
  scopes_.back()[key] = v;
  return v;
}

std::string KernelWriter::compute(NodeId id, const Index& idx) {
  const Node& n = g_.node(id);
  auto need = [&](size_t k) {
    if (n.inputs.size() != k) {
      throw std::invalid_argument(fmt::format("[lower] node {} ({}) has {} inputs, expected {}", id,
                                              op_name(n.kind), n.inputs.size(), k));
    }
  };
  note_node(id);
  const std::string vt(value_type(n.dtype)), base = fmt::format("v{}", id);
  switch (n.kind) {
    case OpKind::Constant: return literal(n.dtype, n.value);
    case OpKind::Iota: return let(vt, base, convert(DType::I64, n.dtype, idx.at(0)));
    case OpKind::Output: need(1); return read(n.inputs[0], idx);
    case OpKind::Cast:
      need(1);
      return let(vt, base, convert(g_.node(n.inputs[0].node).dtype, n.dtype, read(n.inputs[0], idx)));
    case OpKind::Exp2:
    case OpKind::Log2:
    case OpKind::Sin:
    case OpKind::Sqrt:
    case OpKind::Recip: need(1); return let(vt, base, unary_code(n.kind, n.dtype, read(n.inputs[0], idx)));
    case OpKind::Add:
      need(2);
      if (auto sel = concat_select(id, idx)) return *sel;
      [[fallthrough]];
    case OpKind::Mul:
    case OpKind::Mod:
    case OpKind::LessThan: {
      need(2);
      const std::string a = read(n.inputs[0], idx), b = read(n.inputs[1], idx);
      return let(vt, base, binary_code(n.kind, g_.node(n.inputs[0].node).dtype, a, b));
    }
    case OpKind::Gather: need(2); return gather(id, idx);
    case OpKind::SumReduce:
    case OpKind::MaxReduce: need(1); return unit_reduce(id, idx);
    default:
      throw std::logic_error(fmt::format("[codegen] {}: node {} ({}) has no buffer and cannot be inlined",
                                         name_, id, op_name(n.kind)));
  }
}

// A reduction over a length-1 axis: the one element, combined once with the identity so the
// result is bit-identical to the reduction kernel's (e.g. -0.0 + 0.0 for sums).
std::string KernelWriter::unit_reduce(NodeId id, const Index& idx) {
  const Node& n = g_.node(id);
  const NodeInput& in = n.inputs[0];
  if (n.axis < 0 || static_cast<size_t>(n.axis) > idx.size() || in.view.rank() != idx.size() + 1 ||
      in.view.dims[n.axis].as_const() != 1) {
    throw std::logic_error(fmt::format("[codegen] {}: node {} ({}) is not a length-1 reduction", name_, id,
                                       op_name(n.kind)));
  }
  Index src = idx;
  src.insert(src.begin() + n.axis, "0");
  const DType in_dt = g_.node(in.node).dtype, acc = accumulator_dtype(in_dt);
  std::string v = convert(in_dt, acc, read(in, src));
  if (n.kind == OpKind::SumReduce) {
    v = acc == DType::I64 ? v : fmt::format("({} + {})", v, zero(acc));
  }
  return let(value_type(n.dtype), fmt::format("v{}", id), convert(acc, n.dtype, v));
}

std::string KernelWriter::gather(NodeId id, const Index& idx) {
  const Node& n = g_.node(id);
  const NodeInput &data = n.inputs[0], &ix = n.inputs[1];
  const size_t k = ix.view.rank();
  if (data.view.rank() == 0 || idx.size() != k + data.view.rank() - 1) {
    throw std::invalid_argument(fmt::format("[lower] gather node {}: data rank {}, index rank {}, output rank {}",
                                            id, data.view.rank(), k, idx.size()));
  }
  const DType it = g_.node(ix.node).dtype;
  if (it != DType::I32 && it != DType::I64) {
    throw std::invalid_argument(fmt::format("[lower] gather node {}: index dtype must be i32 or i64, got {}",
                                            id, dtype_name(it)));
  }
  const std::string raw = read(ix, Index(idx.begin(), idx.begin() + static_cast<long>(k)));
  const std::string row = let("long long", "row", fmt::format("lum_clamp_row({}, {}, {}, LUM_ERR_GATHER)",
                                                              convert(it, DType::I64, raw),
                                                              dim(data.view.dims[0]), error_flag()));
  Index src{row};
  src.insert(src.end(), idx.begin() + static_cast<long>(k), idx.end());
  return read(data, src);
}

}  // namespace luminal::cuda::codegen
