// Recognizes the canonical matmul form for cuBLASLt:
//   SumReduce(last axis) of Mul(a, b) over [batch..., M, N, K], a with stride 0 on N, b with
//   stride 0 on M; optionally followed by  + bias[n]  and  relu(x) = x * cast(0 < x).
#include <array>

#include <fmt/format.h>

#include "compiler/lower_internal.h"

namespace luminal::compiler::detail {

namespace {

bool is_const(const Expr& e, int64_t v) { return e.as_const() == v; }

// A dynamic dim without a hint counts as this much: dynamic dims are usually batch-like, and a
// generated kernel on a large matmul costs far more than cuBLASLt on a small one.
constexpr int64_t kUnhintedDim = 1024;

// Evaluates e with dim hints.
int64_t estimate(const Expr& e, const DynMap& hints) {
  DynMap m = hints;
  for (const std::string& s : e.symbols()) m.try_emplace(s, kUnhintedDim);
  return e.eval(m);
}

// Batch dims [0, nb) of one operand collapse to one stride; nullopt when they do not.
std::optional<Expr> batch_stride(const ShapeTracker& v, size_t nb) {
  std::optional<Expr> stride;  // stride of the innermost non-trivial batch dim
  Expr span = 0;               // the stride the next outer batch dim needs to continue the run
  for (size_t d = nb; d-- > 0;) {
    if (is_const(v.dims[d], 1)) continue;
    if (stride && !v.strides[d].same(span)) return std::nullopt;
    if (!stride) stride = v.strides[d];
    span = v.strides[d] * v.dims[d];
  }
  return stride ? *stride : Expr(0);
}

// A 2-D operand [rows, cols] with strides (sr, sc): size-1 dims get a harmless stride, then one
// stride must be 1 and the other a valid leading dimension.
bool blas_layout(const Expr& rows, const Expr& cols, Expr& sr, Expr& sc) {
  if (is_const(rows, 1)) sr = is_const(sc, 1) ? cols : Expr(1);
  if (is_const(cols, 1)) sc = is_const(sr, 1) ? rows : Expr(1);
  if (is_const(sc, 1)) {
    auto ld = sr.as_const(), c = cols.as_const();
    return !(ld && c && *ld < *c) && !is_const(sr, 0);
  }
  if (is_const(sr, 1)) {
    auto ld = sc.as_const(), r = rows.as_const();
    return !(ld && r && *ld < *r) && !is_const(sc, 0);
  }
  return false;
}

bool no_padding(const ShapeTracker& v) { return !v.has_padding(); }

// The only user of `id`, if it has exactly one.
std::optional<NodeId> sole_user(const Users& users, NodeId id) {
  if (users[id].size() != 1) return std::nullopt;
  return users[id][0];
}

// Matches top -> Add(top, bias[n]); returns the Add and the bias producer.
std::optional<std::pair<NodeId, NodeId>> match_bias(const Graph& g, const Users& users,
                                                    const std::vector<Role>& roles, NodeId top) {
  auto add = sole_user(users, top);
  if (!add || g.node(*add).kind != OpKind::Add) return std::nullopt;
  const Node& a = g.node(*add);
  for (int s = 0; s < 2; ++s) {
    const NodeInput &x = a.inputs[s], &b = a.inputs[1 - s];
    if (x.node != top || b.node == top || !reads_whole_buffer(g, x)) continue;
    const ShapeTracker& v = b.view;
    const size_t r = v.rank();
    bool ok = has_buffer(roles[b.node]) && no_padding(v) && is_const(v.offset, 0) && r >= 1 &&
              is_const(v.strides[r - 1], 1) && product(g.node(b.node).shape).same(v.dims[r - 1]);
    for (size_t d = 0; ok && d + 1 < r; ++d) ok = is_const(v.strides[d], 0) || is_const(v.dims[d], 1);
    if (ok) return std::make_pair(*add, b.node);
  }
  return std::nullopt;
}

// Matches relu(top) = Mul(top, Cast(LessThan(0, top))); returns {Mul, LessThan, Cast}.
std::optional<std::array<NodeId, 3>> match_relu(const Graph& g, const Users& users, NodeId top) {
  if (users[top].size() != 2) return std::nullopt;
  NodeId mul = 0, lt = 0;
  int found = 0;
  for (NodeId u : users[top]) {
    if (g.node(u).kind == OpKind::Mul) mul = u, found |= 1;
    if (g.node(u).kind == OpKind::LessThan) lt = u, found |= 2;
  }
  if (found != 3) return std::nullopt;
  const Node& l = g.node(lt);
  const Node& zero = g.node(l.inputs[0].node);
  if (zero.kind != OpKind::Constant || zero.value != 0.0 || l.inputs[1].node != top ||
      !reads_whole_buffer(g, l.inputs[1])) {
    return std::nullopt;
  }
  auto cast = sole_user(users, lt);
  if (!cast || g.node(*cast).kind != OpKind::Cast || g.node(*cast).dtype != g.node(top).dtype ||
      !reads_whole_buffer(g, g.node(*cast).inputs[0]) || sole_user(users, *cast) != mul) {
    return std::nullopt;
  }
  const Node& m = g.node(mul);
  for (int s = 0; s < 2; ++s) {
    if (m.inputs[s].node == top && m.inputs[1 - s].node == *cast && reads_whole_buffer(g, m.inputs[s]) &&
        reads_whole_buffer(g, m.inputs[1 - s])) {
      return std::array<NodeId, 3>{mul, lt, *cast};
    }
  }
  return std::nullopt;
}

}  // namespace

bool reads_whole_buffer(const Graph& g, const NodeInput& in) {
  return in.view.is_contiguous() && in.view.numel().same(product(g.node(in.node).shape));
}

std::optional<MatmulMatch> match_matmul(const Graph& g, NodeId sum, const Users& users,
                                        const std::vector<Role>& roles, const LowerOptions& opts,
                                        std::vector<NodeId>& materialize) {
  const Node& s = g.node(sum);
  if (!opts.use_cublaslt || s.kind != OpKind::SumReduce || s.inputs.size() != 1) return std::nullopt;
  const NodeInput& sin = s.inputs[0];
  const size_t r = sin.view.rank();
  if (r < 3 || s.axis != static_cast<int>(r) - 1 || !reads_whole_buffer(g, sin)) return std::nullopt;
  const Node& mul = g.node(sin.node);
  const DType dt = mul.dtype;
  if (mul.kind != OpKind::Mul || mul.inputs.size() != 2 ||
      !(dt == DType::F32 || dt == DType::F16 || dt == DType::BF16 || dt == DType::F64)) {
    return std::nullopt;
  }
  const size_t im = r - 3, in_ = r - 2, ik = r - 1;
  int sa = -1;
  for (int o = 0; o < 2 && sa < 0; ++o) {
    const ShapeTracker &a = mul.inputs[o].view, &b = mul.inputs[1 - o].view;
    if (a.rank() == r && b.rank() == r && no_padding(a) && no_padding(b) &&
        is_const(a.strides[in_], 0) && is_const(b.strides[im], 0)) {
      sa = o;
    }
  }
  if (sa < 0) return std::nullopt;
  const NodeInput &ain = mul.inputs[sa], &bin = mul.inputs[1 - sa];
  const ShapeTracker &av = ain.view, &bv = bin.view;
  MatmulMatch mm;
  MatmulStep& st = mm.step;
  st.dtype = dt;
  st.m = av.dims[im], st.n = av.dims[in_], st.k = av.dims[ik];
  st.batch = product(std::vector<Expr>(av.dims.begin(), av.dims.begin() + static_cast<long>(im)));
  auto ab = batch_stride(av, im), bb = batch_stride(bv, im);
  if (!ab || !bb) return std::nullopt;
  st.a_batch = *ab, st.b_batch = *bb;
  st.a_offset = av.offset, st.b_offset = bv.offset;
  st.a_row = av.strides[im], st.a_col = av.strides[ik];
  st.b_row = bv.strides[ik], st.b_col = bv.strides[in_];
  if (!blas_layout(st.m, st.k, st.a_row, st.a_col) || !blas_layout(st.k, st.n, st.b_row, st.b_col)) {
    return std::nullopt;
  }
  mm.a_node = ain.node, mm.b_node = bin.node;
  std::vector<NodeId> operands;
  for (NodeId op : {ain.node, bin.node}) {
    if (has_buffer(roles[op])) continue;
    if (roles[op] != Role::Inline) return std::nullopt;
    operands.push_back(op);
  }
  // Choice points: the backend's GEMM library ("library": cuBLASLt on CUDA, oneDNN on the CPU) or
  // a generated reduction (the heuristic: the library from the flop floor up), the epilogue fused
  // or left to the consumers, and (CUDA) which of cuBLASLt's heuristic algorithms.
  const int64_t flops = 2 * estimate(st.batch * st.m * st.n * st.k, opts.dim_hints);
  const std::string about = fmt::format("%{} {} batch {} m {} n {} k {}", sum, dtype_name(dt),
                                        st.batch.to_string(), st.m.to_string(), st.n.to_string(),
                                        st.k.to_string());
  const bool heuristic = flops >= opts.cublaslt_min_flops;
  const std::vector<std::string> backends =
      heuristic ? std::vector<std::string>{"library", "generated"}
                : std::vector<std::string>{"generated", "library"};
  if (choose(opts, {fmt::format("matmul@{}", sum), backends, "matmul " + about}) == "generated")
    return std::nullopt;
  materialize.insert(materialize.end(), operands.begin(), operands.end());
  if (opts.library_algos)
    st.algo = std::stoi(choose(opts, {fmt::format("algo@{}", sum), {"0", "1", "2", "3"},
                                      "cuBLASLt heuristic algorithm of " + about}));
  // Split-K for a long k (a constant >= 2048): at small batches the output has fewer tiles than
  // the GPU has SMs and each tile walks all of k alone (DLRM-v2 at one sample: the V GEMM's 80
  // tiles of k 3456, the top MLP's first layer's 24, on 132 SMs). Timed by the search like the
  // algorithm; "1" first keeps the default. Kept to the longest k: each point costs the search
  // two candidates of its budget (48 by default).
  if (opts.library_algos && st.k.as_const() && *st.k.as_const() >= 2048)
    st.split_k = std::stoi(choose(opts, {fmt::format("splitk@{}", sum), {"1", "4", "8"},
                                         "cuBLASLt split-K slices of " + about}));
  // The GEMV kernel for few rows (decode), picked per execute by m; offered where B runs along k
  // (a [n, k] weight). 8 = kLumGemvMaxM in src/cuda/kernels/gemv.cuh.
  if (opts.library_algos && (dt == DType::F32 || dt == DType::F16 || dt == DType::BF16) &&
      is_const(st.b_row, 1) &&
      is_const(st.a_col, 1) &&
      choose(opts, {fmt::format("gemv@{}", sum), {"yes", "no"},
                    "GEMV kernel instead of cuBLASLt at m <= 8 for " + about}) == "yes")
    st.gemv_max_m = 8;
  mm.top = sum;
  const auto bias = match_bias(g, users, roles, sum);
  const auto relu = match_relu(g, users, bias ? bias->first : sum);
  if ((bias || relu) && choose(opts, {fmt::format("epilogue@{}", sum), {"fused", "separate"},
                                      "bias / ReLU of " + about}) == "separate")
    return mm;
  if (bias) {
    mm.fused.push_back(sum);
    mm.top = bias->first;
    mm.bias_node = bias->second;
  }
  if (relu) {
    mm.fused.insert(mm.fused.end(), {mm.top, (*relu)[1], (*relu)[2]});
    mm.top = (*relu)[0];
    st.relu = true;
  }
  st.nodes = mm.fused;
  st.nodes.push_back(mm.top);
  st.nodes.insert(st.nodes.begin(), sin.node);
  return mm;
}

}  // namespace luminal::compiler::detail
