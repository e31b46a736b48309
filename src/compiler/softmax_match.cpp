// Recognizes the softmax denominator for a one-pass ("online") kernel:
//   M = MaxReduce(x, a)
//   S = SumReduce(exp2((x + unreduce(M) * -1) * c), a)      (tensor.h softmax / exp decompositions)
// One kernel then computes M and S together, rescaling the running sum whenever the running max
// grows, instead of a max kernel followed by a sum kernel that reads x again.
#include "compiler/lower_internal.h"

namespace luminal::compiler::detail {

namespace {

bool same_view(const ShapeTracker& a, const ShapeTracker& b) {
  auto same_list = [](const std::vector<Expr>& x, const std::vector<Expr>& y) {
    if (x.size() != y.size()) return false;
    for (size_t i = 0; i < x.size(); ++i) {
      if (!x[i].same(y[i])) return false;
    }
    return true;
  };
  return same_list(a.dims, b.dims) && same_list(a.strides, b.strides) && same_list(a.pad_lo, b.pad_lo) &&
         same_list(a.pad_hi, b.pad_hi) && a.offset.same(b.offset);
}

// The inlined node read by `in` with an identity view, or nullopt.
std::optional<NodeId> inlined_whole(const Graph& g, const std::vector<Role>& roles, const NodeInput& in, OpKind k) {
  if (roles[in.node] != Role::Inline || g.node(in.node).kind != k || !reads_whole_buffer(g, in)) return std::nullopt;
  return in.node;
}

// The value of a Constant read by `in` (any broadcast view without padding), or nullopt.
std::optional<double> constant_of(const Graph& g, const NodeInput& in) {
  const Node& n = g.node(in.node);
  if (n.kind != OpKind::Constant || in.view.has_padding()) return std::nullopt;
  return n.value;
}

// M read through unreduce(M, axis): M's dims with a stride-0 dim inserted at axis.
bool unreduce_read(const Graph& g, const NodeInput& in, NodeId m, int axis) {
  if (in.node != m || in.view.has_padding() || in.view.offset.as_const() != 0) return false;
  ShapeTracker want = ShapeTracker::contiguous(g.node(m).shape).expand(axis, in.view.dims.at(axis));
  return same_view(in.view, want);
}

}  // namespace

std::optional<SoftmaxMatch> match_online_softmax(const Graph& g, NodeId sum, const std::vector<Role>& roles) {
  const Node& s = g.node(sum);
  if (s.kind != OpKind::SumReduce || roles[sum] != Role::Kernel || s.inputs.size() != 1 || !is_float(s.dtype)) {
    return std::nullopt;
  }
  auto e = inlined_whole(g, roles, s.inputs[0], OpKind::Exp2);
  if (!e) return std::nullopt;
  auto t = inlined_whole(g, roles, g.node(*e).inputs.at(0), OpKind::Mul);
  if (!t) return std::nullopt;
  for (int ti = 0; ti < 2; ++ti) {
    const Node& tn = g.node(*t);
    auto c = constant_of(g, tn.inputs[1 - ti]);
    auto d = inlined_whole(g, roles, tn.inputs[ti], OpKind::Add);
    if (!c || !d) continue;
    const Node& dn = g.node(*d);
    for (int di = 0; di < 2; ++di) {
      const NodeInput& x = dn.inputs[di];
      auto neg = inlined_whole(g, roles, dn.inputs[1 - di], OpKind::Mul);
      if (!neg) continue;
      const Node& nn = g.node(*neg);
      for (int ni = 0; ni < 2; ++ni) {
        const NodeInput& mi = nn.inputs[ni];
        const Node& m = g.node(mi.node);
        if (m.kind != OpKind::MaxReduce || roles[mi.node] != Role::Kernel || m.axis != s.axis ||
            constant_of(g, nn.inputs[1 - ni]) != -1.0 || !unreduce_read(g, mi, mi.node, s.axis) ||
            m.inputs[0].node != x.node || !same_view(m.inputs[0].view, x.view) || m.dtype != s.dtype) {
          continue;
        }
        return SoftmaxMatch{mi.node, *c};
      }
    }
  }
  return std::nullopt;
}

}  // namespace luminal::compiler::detail
