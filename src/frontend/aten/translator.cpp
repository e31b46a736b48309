// import_pt2: walks an exported program in order (inputs, nodes, outputs) and builds the graph.
// Every node's result is checked against the dtype and shape torch.export recorded for it, so a
// lowering that builds the wrong shape fails at that node instead of producing wrong numbers.
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "frontend/aten/node.h"
#include "luminal/program.h"

namespace luminal {
namespace {

using aten::AtenNode;

std::string dtype_label(const Pt2TensorMeta& m) {
  return m.dtype ? std::string(dtype_name(*m.dtype)) : torch_scalar_type_name(m.scalar_type);
}

std::vector<Expr> meta_dims(const Pt2TensorMeta& m) {
  std::vector<Expr> d;
  for (const Pt2SymInt& s : m.sizes) d.push_back(aten::sym_int_expr(s));
  return d;
}

// Symbol values to compare two shapes by: each symbol's hint (or its range's minimum, or 7),
// then a second, different assignment, so expressions equal as functions compare equal even when
// they simplify to different trees.
std::vector<DynMap> probe_points(const Pt2Program& p) {
  DynMap a, b;
  for (const auto& [name, s] : p.graph.sym_int_values) {
    if (!s.is_symbolic()) continue;
    for (const std::string& sym : aten::sym_int_expr(s).symbols()) {
      int64_t v = s.has_hint && s.expr == sym ? s.value : 7;
      if (auto r = p.range_constraints.find(sym); r != p.range_constraints.end() && r->second.min)
        v = std::max<int64_t>(v, *r->second.min);
      a.emplace(sym, v);
      b.emplace(sym, v + 3);
    }
  }
  for (const auto& [sym, r] : p.range_constraints) {
    const int64_t v = r.min ? std::max<int64_t>(*r.min, 2) : 5;
    a.emplace(sym, v);
    b.emplace(sym, v + 3);
  }
  return {a, b};
}

bool same_dim(const Expr& x, const Expr& y, const std::vector<DynMap>& probes) {
  if (x.same(y)) return true;
  try {
    for (const DynMap& d : probes)
      if (x.eval(d) != y.eval(d)) return false;
    return true;
  } catch (const std::exception&) {
    return false;  // a symbol the probes do not bind
  }
}

class Translator {
 public:
  Translator(std::shared_ptr<const Pt2Archive> archive, ImportedProgram& out)
      : archive_(std::move(archive)),
        p_(archive_->program()),
        out_(out),
        probes_(probe_points(p_)) {}

  void run() {
    out_.graph = std::make_unique<Graph>();
    declare_inputs();
    for (const Pt2Node& n : p_.graph.nodes) translate(n);
    mark_outputs();
    // Values read from data (item()'s u0, ...) are graph tensors, not sizes an input binds.
    for (const auto& [sym, r] : p_.range_constraints)
      if (!values_.data_scalars.count(sym)) out_.symbols[sym] = r;
  }

 private:
  Graph& g() { return *out_.graph; }

  const Pt2TensorMeta& meta_of(const std::string& name, const std::string& what) {
    auto it = p_.graph.tensor_values.find(name);
    if (it == p_.graph.tensor_values.end())
      throw std::invalid_argument(fmt::format("[aten] {} '{}' has no tensor metadata", what, name));
    return it->second;
  }

  DType dtype_of(const Pt2TensorMeta& m, const std::string& name) {
    if (!m.dtype)
      throw std::invalid_argument(
          fmt::format("[aten] input '{}' has dtype {}, which luminal does not support", name,
                      torch_scalar_type_name(m.scalar_type)));
    return *m.dtype;
  }

  void declare_inputs() {
    std::set<std::string> labels;
    for (const Pt2InputSpec& s : p_.input_specs) {
      switch (s.kind) {
        case Pt2InputKind::UserInput:
          declare_user_input(s, labels);
          break;
        case Pt2InputKind::Parameter:
        case Pt2InputKind::Buffer:
        case Pt2InputKind::TensorConstant:
          declare_weight(s, labels);
          break;
        case Pt2InputKind::ConstantInput:
          break;  // a constant baked into the nodes' arguments
        case Pt2InputKind::CustomObj:
          throw std::invalid_argument(fmt::format(
              "[aten] input '{}' is a script object (custom_obj), which luminal cannot run",
              s.name));
        case Pt2InputKind::Token:
          throw std::invalid_argument(
              fmt::format("[aten] input '{}' is an effect token (a side-effecting op), which "
                          "luminal cannot run",
                          s.name));
      }
    }
  }

  void claim_label(std::set<std::string>& labels, const std::string& label) {
    if (!labels.insert(label).second)
      throw std::invalid_argument(fmt::format("[aten] two graph inputs are named '{}'", label));
  }

  void declare_user_input(const Pt2InputSpec& s, std::set<std::string>& labels) {
    if (s.arg.kind != "tensor")
      throw std::invalid_argument(
          fmt::format("[aten] user input '{}' is a {} (only tensor inputs are supported; pass it "
                      "as a tensor or "
                      "make it a constant)",
                      s.name, s.arg.kind));
    const Pt2TensorMeta& m = meta_of(s.name, "user input");
    claim_label(labels, s.name);
    GraphTensor t = g().named_tensor(s.name, meta_dims(m), dtype_of(m, s.name));
    values_.tensors[s.name] = t;
    out_.inputs.push_back(ProgramTensor{s.name, t.dtype, t.dims(), t});
  }

  void declare_weight(const Pt2InputSpec& s, std::set<std::string>& labels) {
    const Pt2Tensor* src = archive_->find_tensor(s.target);
    if (!src)
      throw std::invalid_argument(
          fmt::format("[aten] the archive has no data for '{}' (input '{}')", s.target, s.name));
    const Pt2TensorMeta& m = meta_of(s.name, "input");
    const DType dt = dtype_of(m, s.target);
    if (dt != src->dtype)
      throw std::invalid_argument(
          fmt::format("[aten] '{}' is {} in the graph but {} in the archive", s.target,
                      dtype_name(dt), dtype_name(src->dtype)));
    claim_label(labels, s.target);
    GraphTensor t = g().named_tensor(s.target, meta_dims(m), dt).persist();
    values_.tensors[s.name] = t;
    out_.weights.push_back(ProgramWeight{t, src});
  }

  void translate(const Pt2Node& n) {
    AtenNode node(g(), p_, n, values_);
    aten::Lowering lower = aten::find_lowering(n.target);
    if (!lower)
      node.fail(
          "this ATen op is not supported by the luminal translator (not in "
          "src/frontend/aten/aten_ops.def)");
    try {
      lower(node);
    } catch (const std::invalid_argument& e) {
      if (std::string_view(e.what()).rfind("[aten]", 0) == 0) throw;
      node.fail(e.what());  // a GraphTensor error ("[matmul] ..."): name the node too
    }
    for (const auto& [i, t] : node.results()) check_result(node, i, t);
  }

  void check_result(const AtenNode& node, size_t i, const GraphTensor& t) {
    if (!node.output_is_tensor(i)) return;
    const Pt2TensorMeta& m = node.out_meta(i);
    if (!m.dtype || *m.dtype != t.dtype)
      node.fail(fmt::format("the translation made {} where torch.export recorded {} (output {})",
                            dtype_name(t.dtype), dtype_label(m), i));
    const std::vector<Expr> want = meta_dims(m);
    bool ok = want.size() == t.dims().size();
    for (size_t d = 0; ok && d < want.size(); ++d) ok = same_dim(want[d], t.dims()[d], probes_);
    if (!ok)
      node.fail(
          fmt::format("the translation made shape {} where torch.export recorded {} (output {})",
                      shape_string(t.dims()), shape_string(want), i));
  }

  void mark_outputs() {
    for (size_t i = 0; i < p_.output_specs.size(); ++i) {
      const Pt2OutputSpec& s = p_.output_specs[i];
      if (s.kind != Pt2OutputKind::UserOutput)
        throw std::invalid_argument(
            fmt::format("[aten] output '{}' mutates '{}' (buffer or input mutation), which luminal "
                        "does not support",
                        s.name, s.target));
      if (s.arg.kind != "tensor")
        throw std::invalid_argument(fmt::format(
            "[aten] output {} is a {}; only tensor outputs are supported", i, s.arg.kind));
      auto it = values_.tensors.find(s.name);
      if (it == values_.tensors.end())
        throw std::invalid_argument(fmt::format("[aten] output '{}' was never produced", s.name));
      GraphTensor t = it->second;
      t.output();
      out_.outputs.push_back(
          ProgramTensor{fmt::format("output_{}", out_.outputs.size()), t.dtype, t.dims(), t});
    }
  }

  std::shared_ptr<const Pt2Archive> archive_;
  const Pt2Program& p_;
  ImportedProgram& out_;
  std::vector<DynMap> probes_;
  aten::Values values_;
};

}  // namespace

ImportedProgram import_pt2(std::shared_ptr<const Pt2Archive> archive, const ImportOptions& opts) {
  (void)opts;
  ImportedProgram out;
  out.archive = archive;
  Translator(std::move(archive), out).run();
  return out;
}

ImportedProgram import_pt2(const std::string& path, const ImportOptions& opts) {
  return import_pt2(std::make_shared<const Pt2Archive>(Pt2Archive::open(path, opts.model)), opts);
}

}  // namespace luminal
