// KernelWriter's concat select: an Add whose operands (through any depth of inlined Adds) are reads
// padded along one axis with disjoint valid ranges is a concat. Summing the padded reads would make
// every output element evaluate every part (a 27-part concat reads 27 inputs per element), so the
// Add is emitted as a binary search over the parts' ranges on that axis that evaluates one part:
//
//   float v9;
//   if (i1 < 256) { if (i1 < 128) { v9 = <part 0 at i1>; } else { v9 = <part 1 at i1 - 128>; } }
//   else { ... }
//
// Anything else (overlapping ranges, padding on two axes, an unpadded operand, ranges whose order
// cannot be proven) falls back to the plain sum, which is always correct. The select differs from
// the sum only in the sign of zero: x + 0.0 turns -0.0 into +0.0, the select keeps -0.0.
#include <algorithm>

#include <fmt/format.h>

#include "cuda/codegen/dtype_code.h"
#include "cuda/codegen/kernel_writer.h"

namespace luminal::cuda::codegen {

namespace {

constexpr size_t kMaxParts = 4096;  // beyond this the plain sum is emitted (bounded source size)

bool is_zero(const Expr& e) { return e.as_const() == 0; }

// True when b - a is provably >= 0.
bool provably_le(const Expr& a, const Expr& b) {
  auto d = (b - a).as_const();
  return d && *d >= 0;
}

// The one padded axis of v; -1 when none, -2 when more than one.
int padded_axis(const ShapeTracker& v) {
  int axis = -1;
  for (size_t d = 0; d < v.rank(); ++d) {
    const bool lo = d < v.pad_lo.size() && !is_zero(v.pad_lo[d]);
    const bool hi = d < v.pad_hi.size() && !is_zero(v.pad_hi[d]);
    if (!lo && !hi) continue;
    if (axis != -1) return -2;
    axis = static_cast<int>(d);
  }
  return axis;
}

// v without its padding on axis a (same offset and strides): reads the producer at i - pad_lo.
ShapeTracker strip_padding(const ShapeTracker& v, int a) {
  ShapeTracker s = v;
  if (a < 0) return s;
  s.dims[a] = v.dims[a] - v.pad_lo[a] - v.pad_hi[a];
  s.pad_lo[a] = 0;
  s.pad_hi[a] = 0;
  return s;
}

// True when v reads a buffer of pshape whole, in row-major order, apart from padding on axis a.
bool plain_but_padding(const ShapeTracker& v, const std::vector<Expr>& pshape, int a) {
  const ShapeTracker s = strip_padding(v, a);
  if (s.rank() != pshape.size() || !s.is_contiguous()) return false;
  for (size_t d = 0; d < s.rank(); ++d) {
    if (!s.dims[d].same(pshape[d])) return false;
  }
  return true;
}

}  // namespace

// Collects the concat parts under input `in` of an Add, `shift` being where the Add's own axis
// starts in the root's coordinates. False when the subtree is not a concat along one axis.
bool KernelWriter::concat_parts(const NodeInput& in, const Expr& shift, int& axis,
                                std::vector<ConcatPart>& parts) {
  const ShapeTracker& v = in.view;
  const int pa = padded_axis(v);
  if (pa == -2 || (pa >= 0 && axis >= 0 && pa != axis) || parts.size() >= kMaxParts) return false;
  if (pa >= 0) axis = pa;
  const Node& p = g_.node(in.node);
  if (p.kind == OpKind::Add && plan_.buffer_of_node.at(in.node) < 0 && p.inputs.size() == 2 &&
      plain_but_padding(v, p.shape, pa)) {
    const Expr inner = pa >= 0 ? shift + v.pad_lo[pa] : shift;
    note_node(in.node);
    return concat_parts(p.inputs[0], inner, axis, parts) &&
           concat_parts(p.inputs[1], inner, axis, parts);
  }
  if (pa < 0) return false;  // an unpadded operand overlaps every other part
  const Expr start = shift + v.pad_lo[pa];
  parts.push_back({NodeInput{in.node, strip_padding(v, pa)}, start,
                   start + (v.dims[pa] - v.pad_lo[pa] - v.pad_hi[pa])});
  return true;
}

std::optional<std::string> KernelWriter::concat_select(NodeId id, const Index& idx) {
  const Node& n = g_.node(id);
  int axis = -1;
  std::vector<ConcatPart> parts;
  if (!concat_parts(n.inputs[0], 0, axis, parts) || !concat_parts(n.inputs[1], 0, axis, parts))
    return std::nullopt;
  if (axis < 0 || static_cast<size_t>(axis) >= idx.size() || parts.size() < 2) return std::nullopt;
  auto ordered = [&] {
    for (size_t k = 0; k + 1 < parts.size(); ++k) {
      if (!provably_le(parts[k].end, parts[k + 1].start)) return false;
    }
    return true;
  };
  if (!ordered()) {
    for (const ConcatPart& p : parts) {
      if (!p.start.as_const() || !p.end.as_const()) return std::nullopt;
    }
    std::stable_sort(parts.begin(), parts.end(), [](const ConcatPart& x, const ConcatPart& y) {
      return *x.start.as_const() < *y.start.as_const();
    });
    if (!ordered()) return std::nullopt;
  }
  // Segments cover [0, dim): the parts, and zero-valued gaps where the padding leaves holes.
  std::vector<Segment> segs;
  Expr at = 0;
  for (size_t k = 0; k < parts.size(); ++k) {
    if (!is_zero(parts[k].start - at)) segs.push_back({at, -1});
    segs.push_back({parts[k].start, static_cast<int>(k)});
    at = parts[k].end;
  }
  if ((n.shape[axis] - at).as_const() != 0) segs.push_back({at, -1});
  const std::string out = fresh(fmt::format("v{}", id));
  line(fmt::format("{} {};", value_type(n.dtype), out));
  select_segments(parts, segs, 0, segs.size(), axis, idx, out, n.dtype);
  return out;
}

// Binary search over segs[lo, hi) on idx[axis]; each leaf assigns its part's value to `out`.
void KernelWriter::select_segments(const std::vector<ConcatPart>& parts,
                                   const std::vector<Segment>& segs, size_t lo, size_t hi, int axis,
                                   const Index& idx, const std::string& out, DType dt) {
  if (hi - lo == 1) {
    const Segment& s = segs[lo];
    if (s.part < 0) {
      line(fmt::format("{} = {};", out, zero(dt)));
      return;
    }
    const ConcatPart& p = parts[s.part];
    Index local = idx;
    if (!is_zero(p.start))
      local[axis] = let("long long", "c", fmt::format("{} - {}", idx[axis], paren(dim(p.start))));
    line(fmt::format("{} = {};", out, read(p.edge, local)));
    return;
  }
  const size_t mid = lo + (hi - lo) / 2;
  open(fmt::format("if ({} < {})", idx[axis], paren(dim(segs[mid].start))));
  select_segments(parts, segs, lo, mid, axis, idx, out, dt);
  close();
  open("else");
  select_segments(parts, segs, mid, hi, axis, idx, out, dt);
  close();
}

}  // namespace luminal::cuda::codegen
