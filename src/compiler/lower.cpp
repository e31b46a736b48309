// lower(): Graph -> KernelPlan for the CUDA backend (luminal-style fusion).
//
// Materialized nodes ("roots") get buffers: Inputs, Outputs, SumReduce, MaxReduce, Scatter and
// Custom. Every other node (elementwise ops, Constant, Iota, Gather) is inlined: recomputed inside
// each root kernel that reads it. On top of that:
//   - matmul-shaped reductions with operands in buffers become MatmulSteps (cuBLASLt), taking a
//     following bias add / ReLU along; inlined operands of such matmuls are materialized;
//   - a root read only by one Output through a plain view writes straight into the Output buffer;
//   - an Output computed element for element from one reduction (e.g. sigmoid(sum + bias)) is
//     evaluated by the reduction kernel after its reduce (no Output kernel, no reduction buffer);
//   - a softmax's max and sum of exp2((x - max) * c) run as one online-softmax kernel;
//   - Custom inputs are handed over as contiguous buffers (copy kernels where needed).
// Passes run in this order over the nodes in creation (topological) order.
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/lower_internal.h"
#include "luminal/custom_op.h"

namespace luminal::compiler {

namespace {

using detail::Role;

// A kernel step that computes what `spec` says (the codegen renders it later).
KernelStep kernel(KernelSpec spec) {
  KernelStep k;
  k.spec = std::move(spec);
  return k;
}

// A kernel of `kind` for `node` writing buffer `out`; the kind's other fields are set by callers.
KernelSpec spec(KernelSpec::Kind kind, NodeId node, int out, std::string summary) {
  KernelSpec k;
  k.kind = kind;
  k.node = node;
  k.out = out;
  k.summary = std::move(summary);
  return k;
}

// out[i] = input `input` of node (its view) at element i of `dims`: a contiguous copy.
KernelStep copy_input(NodeId node, int input, int out, std::vector<Expr> dims, std::string suffix,
                      std::string summary) {
  KernelSpec k = spec(KernelSpec::Kind::CopyInput, node, out, std::move(summary));
  k.input = input;
  k.dims = std::move(dims);
  k.suffix = std::move(suffix);
  return kernel(std::move(k));
}

// Throws "[lower] scatter node ..." unless node id is a Scatter the codegen can render.
void check_scatter(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if (n.inputs.size() != 3 || n.shape.empty())
    throw std::invalid_argument(
        fmt::format("[lower] scatter node {}: needs dest, idx, src and rank >= 1", id));
  const NodeInput &ix = n.inputs[1], &src = n.inputs[2];
  const DType it = g.node(ix.node).dtype;
  if (it != DType::I32 && it != DType::I64)
    throw std::invalid_argument(fmt::format(
        "[lower] scatter node {}: index dtype must be i32 or i64, got {}", id, dtype_name(it)));
  if (src.view.rank() != ix.view.rank() + n.shape.size() - 1)
    throw std::invalid_argument(fmt::format(
        "[lower] scatter node {}: src rank {} does not match index rank {} and dest rank {}", id,
        src.view.rank(), ix.view.rank(), n.shape.size()));
}

bool unit_reduction(const Node& n) {
  if (n.inputs.size() != 1 || n.axis < 0 || static_cast<size_t>(n.axis) >= n.inputs[0].view.rank()) return false;
  return n.inputs[0].view.dims[n.axis].as_const() == 1;
}

constexpr int kDeepChainLoads = 3;  // see materialize_shared_chains

class Lowering {
 public:
  Lowering(const Graph& g, const LowerOptions& opts)
      : g_(g),
        opts_(opts),
        roles_(g.size(), Role::Dead),
        users_(g.size()),
        alias_of_(g.size(), -1),
        epilogue_of_(g.size(), -1),
        computed_by_reduction_(g.size(), false) {}

  KernelPlan run() {
    mark_roles();
    match_matmuls();
    match_softmaxes();
    prepare_custom_inputs();
    materialize_shared_chains();
    plan_states();
    alias_outputs();
    fuse_epilogues();
    make_buffers();
    for (NodeId id = 0; id < g_.size(); ++id) emit(id);
    emit_state_copies();
    collect_symbols();
    return std::move(plan_);
  }

 private:
  // Liveness from the Outputs, base roles and the live users of every node.
  void mark_roles() {
    std::vector<bool> live(g_.size(), false);
    for (NodeId id = static_cast<NodeId>(g_.size()); id-- > 0;) {
      const Node& n = g_.node(id);
      if (n.kind == OpKind::Output) live[id] = true;
      if (!live[id]) continue;
      for (const NodeInput& in : n.inputs) {
        live[in.node] = true;
        users_[in.node].push_back(id);
      }
    }
    for (auto& u : users_) std::sort(u.begin(), u.end());
    for (NodeId id = 0; id < g_.size(); ++id) {
      const OpKind k = g_.node(id).kind;
      if (k == OpKind::Input) roles_[id] = Role::Input;
      if (!live[id] || k == OpKind::Input) continue;
      switch (k) {
        case OpKind::Output: roles_[id] = Role::Output; break;
        case OpKind::Custom: roles_[id] = Role::Custom; break;
        case OpKind::SumReduce:
        case OpKind::MaxReduce:  // over a length-1 axis it is a plain (inlined) read
          roles_[id] = unit_reduction(g_.node(id)) ? Role::Inline : Role::Kernel;
          break;
        case OpKind::Scatter: roles_[id] = Role::Kernel; break;
        default: roles_[id] = Role::Inline; break;
      }
    }
  }

  void match_matmuls() {
    for (NodeId id = 0; id < g_.size(); ++id) {
      if (roles_[id] != Role::Kernel || g_.node(id).kind != OpKind::SumReduce) continue;
      std::vector<NodeId> materialize;
      auto m = detail::match_matmul(g_, id, users_, roles_, opts_, materialize);
      if (!m) continue;
      for (NodeId op : materialize) roles_[op] = Role::Kernel;
      for (NodeId f : m->fused) roles_[f] = Role::Fused;
      roles_[m->top] = Role::Matmul;
      matmuls_.emplace(m->top, std::move(*m));
    }
  }

  // Softmax denominators: their kernel also computes the max, at the max's place in the order.
  void match_softmaxes() {
    for (NodeId id = 0; id < g_.size(); ++id) {
      auto m = detail::match_online_softmax(g_, id, roles_);
      if (m && !softmax_of_max_.count(m->max) &&
          choose(opts_, {fmt::format("softmax@{}", id), {"online", "two_pass"},
                         fmt::format("softmax %{} over %{}", id, m->max)}) == "online") {
        softmax_of_max_.emplace(m->max, std::make_pair(id, m->scale));
        in_softmax_.insert(id);
        in_softmax_.insert(m->max);
      }
    }
  }

  // An inlined node read whole and in order by a Custom node becomes a root (no extra copy).
  void prepare_custom_inputs() {
    for (NodeId id = 0; id < g_.size(); ++id) {
      if (roles_[id] != Role::Custom) continue;
      for (const NodeInput& in : g_.node(id).inputs) {
        if (roles_[in.node] == Role::Inline && detail::reads_whole_buffer(g_, in)) roles_[in.node] = Role::Kernel;
      }
    }
  }

  // An inlined node is recomputed by every kernel that reads it, element by element. One that
  // reads kDeepChainLoads or more buffers (through its inlined inputs) and has two or more
  // readers gets a buffer of its own instead (choice point materialize@N, yes|no): a residual
  // stream x = x + f(x) inlined through every layer made each layer's RMSNorm reduction reload
  // all earlier layers' outputs (300 us per norm at batch 1 on the H200, 2026-12-03).
  void materialize_shared_chains() {
    std::vector<int> loads(g_.size(), 0);  // buffer reads one inlined evaluation performs
    for (NodeId id = 0; id < g_.size(); ++id) {
      if (roles_[id] != Role::Inline) {
        loads[id] = roles_[id] == Role::Dead ? 0 : 1;
        continue;
      }
      for (const NodeInput& in : g_.node(id).inputs) loads[id] += loads[in.node];
      std::vector<NodeId> readers = users_[id];
      readers.erase(std::unique(readers.begin(), readers.end()), readers.end());
      if (loads[id] < kDeepChainLoads || readers.size() < 2) continue;
      const std::string pick =
          choose(opts_, {fmt::format("materialize@{}", id), {"yes", "no"},
                         fmt::format("%{} {} ({} loads inlined, {} readers)", id,
                                     op_name(g_.node(id).kind), loads[id], readers.size())});
      if (pick == "no") continue;
      roles_[id] = Role::Kernel;
      loads[id] = 1;
    }
  }

  // Outputs written back into an Input (output_into). A Scatter that is the input's only reader
  // writes into the input's buffer (no copy of the dest: the in-place KV-cache update); any other
  // next value is computed into its own buffer and copied into the input's after every step.
  void plan_states() {
    for (NodeId id = 0; id < g_.size(); ++id) {
      const Node& o = g_.node(id);
      if (roles_[id] != Role::Output || o.writes_into < 0) continue;
      const auto into = static_cast<NodeId>(o.writes_into);
      const NodeId v = o.inputs.at(0).node;
      const Node& vn = g_.node(v);
      roles_[id] = Role::Dead;  // no buffer and no step of its own
      if (vn.kind == OpKind::Scatter && roles_[v] == Role::Kernel && vn.inputs[0].node == into &&
          users_[into] == std::vector<NodeId>{v} && detail::reads_whole_buffer(g_, vn.inputs[0]) &&
          detail::reads_whole_buffer(g_, o.inputs[0])) {
        scatter_into_[v] = into;
        continue;
      }
      if (roles_[v] == Role::Inline) roles_[v] = Role::Kernel;  // never read the input it overwrites
      state_copies_.push_back(id);
    }
  }

  void alias_outputs() {
    for (NodeId id = 0; id < g_.size(); ++id) {
      if (roles_[id] != Role::Output) continue;
      const NodeInput& in = g_.node(id).inputs.at(0);
      const Role r = roles_[in.node];
      const bool root = r == Role::Kernel || r == Role::Custom || r == Role::Matmul;
      if (root && users_[in.node].size() == 1 && alias_of_[in.node] < 0 &&
          g_.node(in.node).dtype == g_.node(id).dtype && detail::reads_whole_buffer(g_, in)) {
        alias_of_[in.node] = static_cast<int>(id);
        roles_[id] = Role::Alias;
      }
    }
  }

  // An Output or materialized elementwise node computed from one reduction element for element
  // runs inside the reduction kernel.
  void fuse_epilogues() {
    for (NodeId id = 0; id < g_.size(); ++id) {
      if (roles_[id] != Role::Output && roles_[id] != Role::Kernel) continue;
      auto r = detail::reduction_epilogue_of(g_, id, users_, roles_);
      if (!r || epilogue_of_[*r] >= 0 || in_softmax_.count(*r)) continue;
      epilogue_of_[*r] = static_cast<int>(id);
      computed_by_reduction_[id] = true;
    }
  }

  void make_buffers() {
    plan_.buffer_of_node.assign(g_.size(), -1);
    for (NodeId id = 0; id < g_.size(); ++id) {
      if (!detail::has_buffer(roles_[id]) || epilogue_of_[id] >= 0) continue;
      if (const auto s = scatter_into_.find(id); s != scatter_into_.end()) {
        plan_.buffer_of_node[id] = plan_.buffer_of_node[s->second];  // the input is written in place
        continue;
      }
      const Node& n = g_.node(id);
      PlanBuffer b{id, n.dtype, product(n.shape), PlanBuffer::Kind::Intermediate};
      if (roles_[id] == Role::Input) b.kind = PlanBuffer::Kind::Input;
      if (roles_[id] == Role::Output) b.kind = PlanBuffer::Kind::Output;
      if (alias_of_[id] >= 0) {
        b.kind = PlanBuffer::Kind::Output;
        b.node = static_cast<NodeId>(alias_of_[id]);
        plan_.buffer_of_node[alias_of_[id]] = static_cast<int>(plan_.buffers.size());
      }
      plan_.buffer_of_node[id] = static_cast<int>(plan_.buffers.size());
      plan_.buffers.push_back(std::move(b));
    }
  }

  void emit(NodeId id) {
    const Node& n = g_.node(id);
    const int out = plan_.buffer_of_node[id];
    switch (roles_[id]) {
      case Role::Kernel:
        if (computed_by_reduction_[id]) break;  // written by its reduction's kernel
        if (auto sm = softmax_of_max_.find(id); sm != softmax_of_max_.end()) {
          const NodeId sum = sm->second.first;  // its buffer and the max's are written
          KernelSpec k = spec(KernelSpec::Kind::OnlineSoftmax, sum, plan_.buffer_of_node[sum], "");
          k.other = id;
          k.scale = sm->second.second;
          k.suffix = "online_softmax";
          plan_.steps.push_back(kernel(std::move(k)));
        } else if (in_softmax_.count(id)) {
          break;  // a softmax sum: computed with its max
        } else if (n.kind == OpKind::SumReduce || n.kind == OpKind::MaxReduce) {
          const int epi = epilogue_of_[id];
          KernelSpec k =
              spec(KernelSpec::Kind::Reduce, id, epi < 0 ? out : plan_.buffer_of_node[epi], "");
          k.mode = reduce_mode(id);
          k.epilogue = epi;
          plan_.steps.push_back(kernel(std::move(k)));
        } else if (n.kind == OpKind::Scatter) {
          check_scatter(g_, id);
          if (!scatter_into_.count(id))  // a copy of dest first (else out is dest, updated in place)
            plan_.steps.push_back(copy_input(id, 0, out, n.shape, "dest",
                                             fmt::format("%{} Scatter, copy of dest", id)));
          KernelSpec rows = spec(
              KernelSpec::Kind::ScatterRows, id, out,
              fmt::format("%{} Scatter, rows of src at idx (duplicates: any one wins)", id));
          rows.suffix = "rows";
          plan_.steps.push_back(kernel(std::move(rows)));
        } else {
          plan_.steps.push_back(compute(id, out, n.shape,
                                        fmt::format("%{} {} materialized", id, op_name(n.kind))));
        }
        break;
      case Role::Output:
        if (computed_by_reduction_[id]) break;  // written by its reduction's kernel
        plan_.steps.push_back(compute(id, out, n.shape,
                                      fmt::format("%{} Output of %{} {}", id, n.inputs.at(0).node,
                                                  op_name(g_.node(n.inputs[0].node).kind))));
        break;
      case Role::Custom: emit_custom(id); break;
      case Role::Matmul: emit_matmul(id); break;
      default: break;
    }
  }

  // After every other step (they may read the inputs these overwrite).
  void emit_state_copies() {
    for (NodeId id : state_copies_) {
      const Node& o = g_.node(id);
      plan_.steps.push_back(compute(id, plan_.buffer_of_node[size_t(o.writes_into)], o.shape,
                                    fmt::format("%{} next value of input %{}", id, o.writes_into)));
    }
  }

  // A kernel computing node id's value over `dims` into buffer `out`.
  static KernelStep compute(NodeId id, int out, const std::vector<Expr>& dims, std::string summary) {
    KernelSpec k = spec(KernelSpec::Kind::Compute, id, out, std::move(summary));
    k.dims = dims;
    return kernel(std::move(k));
  }

  // The work split of a generated reduction: the heuristic's (by axis length), or the other one
  // of warp / block per output (thread per output only where the heuristic picks it).
  ReduceMode reduce_mode(NodeId id) {
    const Node& n = g_.node(id);
    const Expr& len = n.inputs[0].view.dims.at(size_t(n.axis));
    const ReduceMode heuristic = choose_reduce_mode(len);
    const ReduceMode other = heuristic == ReduceMode::Warp ? ReduceMode::Block : ReduceMode::Warp;
    const char* name = other == ReduceMode::Warp ? "warp" : "block";
    const std::string pick =
        choose(opts_, {fmt::format("reduce@{}", id), {"auto", name},
                       fmt::format("{} %{} over {}", op_name(n.kind), id, len.to_string())});
    return pick == "auto" ? heuristic : other;
  }

  void emit_custom(NodeId id) {
    const Node& n = g_.node(id);
    if (!n.custom) throw std::invalid_argument(fmt::format("[lower] custom node {} has no op", id));
    CustomStep step;
    step.node = id;
    step.output = plan_.buffer_of_node[id];
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      const NodeInput& in = n.inputs[j];
      const int b = plan_.buffer_of_node[in.node];
      // A contiguous window of a buffer (DLRM_Net's lS_o[k]) is passed as a pointer into it.
      ShapeTracker window = in.view;
      window.offset = 0;
      if (b >= 0 && window.is_contiguous()) {
        step.inputs.push_back(b);
        step.input_offsets.push_back(in.view.offset);
        continue;
      }
      // A fresh contiguous copy of the view (buffers of copies carry the producer's id).
      const int copy = static_cast<int>(plan_.buffers.size());
      plan_.buffers.push_back({in.node, g_.node(in.node).dtype, in.view.numel(), PlanBuffer::Kind::Intermediate});
      plan_.steps.push_back(copy_input(
          id, int(j), copy, in.view.dims, fmt::format("in{}", j),
          fmt::format("contiguous copy of input {} of %{} Custom <{}>", j, id, n.custom->name())));
      step.inputs.push_back(copy);
      step.input_offsets.push_back(0);
    }
    plan_.steps.push_back(std::move(step));
  }

  void emit_matmul(NodeId id) {
    detail::MatmulMatch& m = matmuls_.at(id);
    MatmulStep st = m.step;
    st.a = plan_.buffer_of_node[m.a_node];
    st.b = plan_.buffer_of_node[m.b_node];
    st.c = plan_.buffer_of_node[id];
    if (m.bias_node) st.bias = plan_.buffer_of_node[*m.bias_node];
    if (st.a < 0 || st.b < 0 || st.c < 0 || (m.bias_node && st.bias < 0)) {
      throw std::logic_error(fmt::format("[lower] matmul at node {}: an operand has no buffer", id));
    }
    plan_.steps.push_back(std::move(st));
  }

  void collect_symbols() {
    std::set<std::string> syms;
    auto add = [&](const Expr& e) {
      for (std::string& s : e.symbols()) syms.insert(std::move(s));
    };
    for (NodeId id = 0; id < g_.size(); ++id) {
      if (roles_[id] == Role::Dead) continue;
      const Node& n = g_.node(id);
      for (const Expr& e : n.shape) add(e);
      for (const NodeInput& in : n.inputs) {
        for (const auto* v : {&in.view.dims, &in.view.strides, &in.view.pad_lo, &in.view.pad_hi}) {
          for (const Expr& e : *v) add(e);
        }
        add(in.view.offset);
      }
    }
    plan_.symbols.assign(syms.begin(), syms.end());
  }

  const Graph& g_;
  const LowerOptions& opts_;
  std::vector<Role> roles_;
  detail::Users users_;
  std::vector<int> alias_of_;     // per root: the Output node it writes into, or -1
  std::vector<int> epilogue_of_;  // per reduction: the Output / elementwise root its kernel computes, or -1
  std::vector<bool> computed_by_reduction_;  // Outputs and elementwise roots computed by a reduction kernel
  std::map<NodeId, std::pair<NodeId, double>> softmax_of_max_;  // max -> (its softmax sum, scale)
  std::set<NodeId> in_softmax_;  // maxes and sums computed by online-softmax kernels
  std::map<NodeId, detail::MatmulMatch> matmuls_;
  std::map<NodeId, NodeId> scatter_into_;  // Scatter -> the state Input it updates in place
  std::vector<NodeId> state_copies_;        // state Outputs computed elsewhere, copied at the end
  KernelPlan plan_;
};

}  // namespace

ReduceMode choose_reduce_mode(const Expr& len) {
  auto c = len.as_const();
  if (!c) return ReduceMode::Warp;
  if (*c < 64) return ReduceMode::Thread;
  return *c >= 4096 ? ReduceMode::Block : ReduceMode::Warp;
}

std::string describe(const Step& s) {
  if (const auto* k = std::get_if<KernelStep>(&s)) {
    if (!k->source.empty()) return k->source;
    static constexpr const char* kKinds[] = {"compute", "copy input", "reduce", "online softmax",
                                             "scatter rows"};
    return fmt::format("// kernel ({} %{} -> b{}): {}\n", kKinds[int(k->spec.kind)], k->spec.node,
                       k->spec.out, k->spec.summary);
  }
  if (const auto* m = std::get_if<MatmulStep>(&s)) {
    return fmt::format("// matmul (cuBLASLt{}{}): b{} = b{} @ b{}{}{}, batch {} m {} n {} k {}\n",
                       m->split_k > 1 ? fmt::format("; split-k {}", m->split_k) : "",
                       m->gemv_max_m > 0 ? fmt::format("; GEMV at m <= {}", m->gemv_max_m) : "",
                       m->c, m->a, m->b, m->bias >= 0 ? fmt::format(" + b{}", m->bias) : "",
                       m->relu ? ", relu" : "", m->batch.to_string(), m->m.to_string(),
                       m->n.to_string(), m->k.to_string());
  }
  const auto& c = std::get<CustomStep>(s);
  return fmt::format("// custom node %{}: b{} <- inputs b{}\n", c.node, c.output, fmt::join(c.inputs, ", b"));
}

std::string choose(const LowerOptions& opts, search::ChoicePoint point) {
  if (opts.choices != nullptr) return opts.choices->choose(std::move(point));
  return point.options.at(0);
}

KernelPlan lower(const Graph& g, const LowerOptions& opts) {
  return Lowering(g, opts).run();
}

}  // namespace luminal::compiler
