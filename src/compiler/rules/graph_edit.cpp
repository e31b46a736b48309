// Probing regions on the reference runtime and rebuilding graphs with replacements.
#include "compiler/rules/graph_edit.h"

#include <cstring>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "luminal/reference.h"

namespace luminal::compiler::rules {

namespace {

// values as bytes of dtype dt, or nullopt for dtypes a probe does not feed.
std::optional<std::vector<std::byte>> to_bytes(const std::vector<double>& values, DType dt) {
  std::vector<std::byte> out(values.size() * dtype_size(dt));
  auto put = [&](auto tag) {
    using T = decltype(tag);
    for (size_t i = 0; i < values.size(); ++i) {
      const T v = static_cast<T>(values[i]);
      std::memcpy(out.data() + i * sizeof(T), &v, sizeof(T));
    }
  };
  switch (dt) {
    case DType::F32: put(float{}); break;
    case DType::F64: put(double{}); break;
    case DType::I32: put(int32_t{}); break;
    case DType::I64: put(int64_t{}); break;
    case DType::BF16:  // probe values are chosen exact in bf16
      for (size_t i = 0; i < values.size(); ++i) {
        const uint16_t b = f32_to_bf16_bits(static_cast<float>(values[i]));
        std::memcpy(out.data() + i * 2, &b, 2);
      }
      break;
    default: return std::nullopt;
  }
  return out;
}

// True when every element the view can address lies inside a producer of this shape.
bool view_fits(const ShapeTracker& v, const std::vector<Expr>& producer, const DynMap& dyn) {
  try {
    const ConcreteView c = v.resolve(dyn);
    int64_t reach = c.offset;
    for (size_t d = 0; d < c.dims.size(); ++d) {
      // Indices in the padding read nothing; the rest reach (extent - 1) strides.
      const int64_t extent = c.dims[d] - (d < c.pad_lo.size() ? c.pad_lo[d] + c.pad_hi[d] : 0);
      if (extent <= 0) return true;
      reach += (extent - 1) * (c.strides[d] < 0 ? -c.strides[d] : c.strides[d]);
    }
    return c.offset >= 0 && reach < product(producer).eval(dyn);
  } catch (const std::exception&) {
    return false;
  }
}

// root's region: root and its ancestors, walking inputs backwards; the walk includes but does not
// pass nodes for which `stop` holds, nor Inputs.
std::vector<bool> region_of(const Graph& g, NodeId root, const std::function<bool(NodeId)>& stop) {
  std::vector<bool> in_region(g.size(), false);
  std::vector<NodeId> work{root};
  while (!work.empty()) {
    const NodeId id = work.back();
    work.pop_back();
    if (in_region[id]) continue;
    in_region[id] = true;
    if (id != root && (stop(id) || g.node(id).kind == OpKind::Input)) continue;
    for (const NodeInput& in : g.node(id).inputs) work.push_back(in.node);
  }
  return in_region;
}

}  // namespace

std::set<NodeId> region_leaves(const Graph& g, NodeId root,
                               const std::function<bool(NodeId)>& stop) {
  const std::vector<bool> in_region = region_of(g, root, stop);
  std::set<NodeId> leaves;
  for (NodeId id = 0; id < root; ++id)
    if (in_region[id] && (stop(id) || g.node(id).kind == OpKind::Input)) leaves.insert(id);
  return leaves;
}

std::optional<std::vector<double>> probe(const Graph& g, NodeId root,
                                         const std::vector<ProbeLeaf>& leaves,
                                         const ConstantLookup& constants, const DynMap& dyn,
                                         std::optional<ProbeBatch> batch) {
  auto resize = [&](std::vector<Expr>& dims) {
    if (!batch) return;
    for (Expr& d : dims)
      if (d.as_const() == batch->from) d = batch->to;
  };
  // Strides and offsets that step over whole batches (a view with the batch inside, [P, B]) are
  // multiples of it; a coincidental multiple gives a copy that fails or disagrees.
  auto rescale = [&](Expr& e) {
    if (auto c = e.as_const(); batch && c && *c != 0 && *c % batch->from == 0)
      e = *c / batch->from * batch->to;
  };
  std::map<NodeId, const ProbeLeaf*> leaf_of;
  for (const ProbeLeaf& l : leaves) leaf_of[l.node] = &l;
  // The region: root's ancestors up to the leaves, copied below in creation (topological) order.
  const std::vector<bool> in_region =
      region_of(g, root, [&](NodeId id) { return leaf_of.count(id) > 0; });
  Graph pg;
  std::vector<NodeId> remap(g.size(), 0);
  std::vector<std::pair<GraphTensor, std::vector<std::byte>>> data;
  for (NodeId id = 0; id <= root; ++id) {
    if (!in_region[id]) continue;
    const Node& n = g.node(id);
    if (auto l = leaf_of.find(id); l != leaf_of.end() || n.kind == OpKind::Input) {
      std::vector<std::byte> bytes;
      std::vector<Expr> shape = n.shape;
      if (l != leaf_of.end()) {
        resize(shape);  // known constants keep their own shapes
        auto b = to_bytes(l->second->values, n.dtype);
        const int64_t numel = product(shape).eval(dyn);
        if (!b || static_cast<int64_t>(l->second->values.size()) != numel) return std::nullopt;
        bytes = std::move(*b);
      } else {
        auto c = constants ? constants(id) : std::nullopt;
        if (!c) return std::nullopt;
        bytes.assign(c->begin(), c->end());
      }
      GraphTensor t = pg.named_tensor(fmt::format("leaf_{}", id), shape, n.dtype);
      remap[id] = t.id;
      data.emplace_back(t, std::move(bytes));
      continue;
    }
    Node copy = n;
    resize(copy.shape);
    for (NodeInput& in : copy.inputs) {
      in.node = remap[in.node];
      resize(in.view.dims);
      for (Expr& st : in.view.strides) rescale(st);
      rescale(in.view.offset);
      // A view the substitution did not fit (it merged the batch into another dim) could read
      // past its producer: no answer at this size rather than an out-of-bounds read.
      if (batch && !view_fits(in.view, pg.node(in.node).shape, dyn)) return std::nullopt;
    }
    try {
      remap[id] = pg.add_node(std::move(copy));
    } catch (const std::exception&) {
      return std::nullopt;
    }
  }
  GraphTensor out(&pg, remap[root]);
  out.output();
  ReferenceRuntime rt(pg);
  for (auto& [t, bytes] : data) rt.set_bytes(t, bytes);
  try {
    rt.execute(dyn);
  } catch (const std::exception&) {
    if (!batch) throw;
    return std::nullopt;  // a substituted copy the reference rejects: no answer at this size
  }
  const DType dt = g.node(root).dtype;
  std::vector<double> result;
  if (is_float(dt)) {
    for (float v : rt.get_f32(out)) result.push_back(v);
  } else if (dt == DType::I32) {
    for (int32_t v : rt.get_i32(out)) result.push_back(v);
  } else if (dt == DType::I64) {
    for (int64_t v : rt.get_i64(out)) result.push_back(static_cast<double>(v));
  } else {
    return std::nullopt;
  }
  return result;
}

Rebuilt rebuild(const Graph& g, const std::vector<Replacement>& replacements) {
  std::map<NodeId, const Replacement*> by_target;
  for (const Replacement& r : replacements)
    if (!by_target.emplace(r.target, &r).second)  // two rules claiming one node: neither may be dropped silently
      throw std::logic_error(fmt::format("[rules] two replacements of node {}", r.target));
  Rebuilt out{std::make_unique<Graph>(), std::vector<NodeId>(g.size(), 0)};
  Graph& ng = *out.graph;
  auto map = [&](const GraphTensor& t) {
    GraphTensor m = t;
    m.graph = &ng;
    m.id = out.remap.at(t.id);
    return m;
  };
  for (NodeId id = 0; id < g.size(); ++id) {
    const Node& n = g.node(id);
    if (auto r = by_target.find(id); r != by_target.end()) {
      const GraphTensor t = r->second->build(ng, map);
      const Node& made = ng.node(t.id);
      // Consumers read the target through their own views, so the replacement must be a whole node
      // of the target's shape and dtype.
      if (t.graph != &ng || !t.view.is_contiguous() || made.dtype != n.dtype ||
          made.shape.size() != n.shape.size() || t.view.dims.size() != n.shape.size()) {
        throw std::logic_error(fmt::format("[rules] replacement of node {} is not a whole node", id));
      }
      for (size_t d = 0; d < n.shape.size(); ++d)
        if (!made.shape[d].same(n.shape[d]) || !t.view.dims[d].same(n.shape[d]))
          throw std::logic_error(fmt::format("[rules] replacement of node {} has shape {}, not {}",
                                             id, shape_string(made.shape), shape_string(n.shape)));
      out.remap[id] = t.id;
      continue;
    }
    Node copy = n;
    for (NodeInput& in : copy.inputs) in.node = out.remap[in.node];
    if (copy.writes_into >= 0)  // a state's Input comes earlier: already copied
      copy.writes_into = int64_t(out.remap.at(size_t(copy.writes_into)));
    out.remap[id] = ng.add_node(std::move(copy));
  }
  return out;
}

GraphTensor read(const Graph& g, const NodeInput& in) {
  GraphTensor t(const_cast<Graph*>(&g), in.node);
  t.view = in.view;
  return t;
}

bool reads_whole(const Graph& g, const NodeInput& in, const std::vector<Expr>& shape) {
  const ShapeTracker& v = in.view;
  if (!v.is_contiguous() || v.has_padding() || v.offset.as_const() != 0 || v.rank() != shape.size() ||
      !v.numel().same(product(g.node(in.node).shape)))
    return false;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!v.dims[d].same(shape[d])) return false;
  return true;
}

GraphTensor without_dim(const Graph& g, const NodeInput& in, size_t drop) {
  GraphTensor t = read(g, in);
  ShapeTracker& v = t.view;
  v.dims.erase(v.dims.begin() + long(drop));
  v.strides.erase(v.strides.begin() + long(drop));
  if (v.pad_lo.size() > drop) v.pad_lo.erase(v.pad_lo.begin() + long(drop));
  if (v.pad_hi.size() > drop) v.pad_hi.erase(v.pad_hi.begin() + long(drop));
  return t;
}

GraphTensor moved(const Rebuilt& r, const GraphTensor& t) {
  GraphTensor m = t;
  m.graph = r.graph.get();
  m.id = r.remap.at(t.id);
  return m;
}

}  // namespace luminal::compiler::rules
