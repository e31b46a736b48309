// AtenNode: argument access by schema name, output metadata and error messages.
#include <stdexcept>

#include <fmt/format.h>

#include "frontend/aten/node.h"
#include "frontend/aten/sym_expr.h"

namespace luminal::aten {

Expr sym_int_expr(const Pt2SymInt& s) {
  return s.is_symbolic() ? parse_sym_expr(s.expr) : Expr(s.value);
}

AtenNode::AtenNode(Graph& g, const Pt2Program& program, const Pt2Node& node, Values& values)
    : g_(g), program_(program), node_(node), values_(values), op_(node.target) {
  constexpr std::string_view prefix = "torch.ops.";
  if (op_.rfind(prefix, 0) == 0) op_.erase(0, prefix.size());
}

std::string AtenNode::message(std::string_view why) const {
  std::string m = fmt::format("[aten] {} (node '{}'): {}", op_, node_.name, why);
  // The recorded stack runs from the user's call down into torch; name the deepest frame outside
  // torch's own files (the user's line), else the first.
  const std::string trace = node_.stack_trace();
  std::vector<std::string> frames;
  for (size_t at = trace.find("File \""); at != std::string::npos;) {
    size_t next = trace.find("File \"", at + 1);
    std::string f = trace.substr(at, next == std::string::npos ? std::string::npos : next - at);
    while (!f.empty() && (f.back() == '\n' || f.back() == ' ')) f.pop_back();
    frames.push_back(std::move(f));
    at = next;
  }
  std::string where = frames.empty() ? "" : frames.front();
  for (const std::string& f : frames)
    if (f.find("/torch/") == std::string::npos) where = f;
  if (!where.empty()) m += "\n  at " + where;
  return m;
}

void AtenNode::fail(std::string_view why) const { throw std::invalid_argument(message(why)); }

const Pt2Argument* AtenNode::find(std::string_view name) const {
  for (const Pt2NamedArgument& a : node_.inputs)
    if (a.name == name) return &a.arg;
  return nullptr;
}

const Pt2Argument& AtenNode::need(std::string_view name) const {
  const Pt2Argument* a = find(name);
  if (!a) fail(fmt::format("missing argument '{}'", name));
  return *a;
}

bool AtenNode::has(std::string_view name) const {
  const Pt2Argument* a = find(name);
  if (!a || a->kind == "none") return false;
  if (a->kind == "optional_tensor")
    return !a->values.empty() && a->values[0].kind != Pt2Value::Kind::None;
  return true;
}

GraphTensor AtenNode::lookup_tensor(const std::string& name) const {
  auto it = values_.tensors.find(name);
  if (auto s = values_.segments.find(name); it == values_.tensors.end() && s != values_.segments.end())
    fail(fmt::format("'{}' is a piece of '{}' split by sizes read from its data (as "
                     "KeyedJaggedTensor.to_dict splits the values per key); luminal takes such a piece "
                     "only as embedding_bag's indices",
                     name, s->second.base_name));
  if (it == values_.tensors.end()) fail(fmt::format("tensor '{}' was never produced", name));
  return it->second;
}

GraphTensor AtenNode::tensor(std::string_view name) const {
  const Pt2Argument& a = need(name);
  if ((a.kind != "tensor" && a.kind != "optional_tensor") || a.values.empty() ||
      a.values[0].kind != Pt2Value::Kind::Name)
    fail(fmt::format("argument '{}' is {}, expected a tensor", name, a.kind));
  return lookup_tensor(a.values[0].str);
}

std::optional<GraphTensor> AtenNode::opt_tensor(std::string_view name) const {
  if (!has(name)) return std::nullopt;
  return tensor(name);
}

std::vector<GraphTensor> AtenNode::tensors(std::string_view name) const {
  const Pt2Argument& a = need(name);
  if (a.kind != "tensors")
    fail(fmt::format("argument '{}' is {}, expected Tensor[]", name, a.kind));
  std::vector<GraphTensor> out;
  for (const Pt2Value& v : a.values) out.push_back(lookup_tensor(v.str));
  return out;
}

std::vector<std::optional<GraphTensor>> AtenNode::opt_tensors(std::string_view name) const {
  const Pt2Argument& a = need(name);
  if (a.kind == "tensors") {
    std::vector<std::optional<GraphTensor>> out;
    for (const Pt2Value& v : a.values) out.push_back(lookup_tensor(v.str));
    return out;
  }
  if (a.kind != "optional_tensors")
    fail(fmt::format("argument '{}' is {}, expected Tensor?[]", name, a.kind));
  std::vector<std::optional<GraphTensor>> out;
  for (const Pt2Value& v : a.values) {
    if (v.kind == Pt2Value::Kind::None) {
      out.push_back(std::nullopt);
    } else {
      out.push_back(lookup_tensor(v.str));
    }
  }
  return out;
}

Expr AtenNode::value_to_expr(const Pt2Value& v, std::string_view arg) const {
  if (v.kind == Pt2Value::Kind::Int) return Expr(v.i);
  if (v.kind == Pt2Value::Kind::Bool) return Expr(int64_t{v.b});
  if (v.kind == Pt2Value::Kind::Name) {
    auto it = values_.sym_ints.find(v.str);
    if (it != values_.sym_ints.end()) return it->second;
    auto b = values_.sym_bools.find(v.str);
    if (b != values_.sym_bools.end()) return b->second;
    fail(fmt::format("argument '{}': '{}' is not a known SymInt", arg, v.str));
  }
  fail(fmt::format("argument '{}' is not an integer", arg));
}

Expr AtenNode::sym_int(std::string_view name, std::optional<Expr> fallback) const {
  const Pt2Argument* a = find(name);
  if (!a || a->kind == "none") {
    if (fallback) return *fallback;
    fail(fmt::format("missing argument '{}'", name));
  }
  if (a->values.size() != 1)
    fail(fmt::format("argument '{}' is {}, expected an int", name, a->kind));
  return value_to_expr(a->values[0], name);
}

int64_t AtenNode::int_(std::string_view name, std::optional<int64_t> fallback) const {
  const Expr e = sym_int(name, fallback ? std::optional<Expr>(Expr(*fallback)) : std::nullopt);
  auto c = e.as_const();
  if (!c) fail(fmt::format("argument '{}' = {} must be a concrete int here", name, e.to_string()));
  return *c;
}

std::optional<int64_t> AtenNode::opt_int(std::string_view name) const {
  if (!has(name)) return std::nullopt;
  return int_(name);
}

std::vector<Expr> AtenNode::sym_ints(std::string_view name,
                                     std::optional<std::vector<Expr>> fallback) const {
  const Pt2Argument* a = find(name);
  if (!a || a->kind == "none") {
    if (fallback) return *fallback;
    fail(fmt::format("missing argument '{}'", name));
  }
  std::vector<Expr> out;
  for (const Pt2Value& v : a->values) out.push_back(value_to_expr(v, name));
  return out;
}

std::vector<int64_t> AtenNode::ints(std::string_view name,
                                    std::optional<std::vector<int64_t>> fallback) const {
  std::optional<std::vector<Expr>> fb;
  if (fallback) fb = std::vector<Expr>(fallback->begin(), fallback->end());
  std::vector<int64_t> out;
  for (const Expr& e : sym_ints(name, fb)) {
    auto c = e.as_const();
    if (!c)
      fail(fmt::format("argument '{}' holds {}, which must be a concrete int here", name,
                       e.to_string()));
    out.push_back(*c);
  }
  return out;
}

Scalar AtenNode::scalar(std::string_view name, std::optional<double> fallback) const {
  const Pt2Argument* a = find(name);
  if (!a || a->kind == "none") {
    if (fallback) return Scalar{*fallback, false, false};
    fail(fmt::format("missing argument '{}'", name));
  }
  if (a->values.size() != 1)
    fail(fmt::format("argument '{}' is {}, expected a scalar", name, a->kind));
  const Pt2Value& v = a->values[0];
  switch (v.kind) {
    case Pt2Value::Kind::Int:
      return Scalar{static_cast<double>(v.i), false, false};
    case Pt2Value::Kind::Float:
      return Scalar{v.f, true, false};
    case Pt2Value::Kind::Bool:
      return Scalar{v.b ? 1.0 : 0.0, false, true};
    case Pt2Value::Kind::Name: {
      if (auto f = values_.sym_floats.find(v.str); f != values_.sym_floats.end())
        return Scalar{f->second, true, false};
      const bool is_bool = values_.sym_bools.count(v.str) > 0;
      const Expr e = value_to_expr(v, name);
      if (auto c = e.as_const(); c && is_bool) return Scalar{*c != 0 ? 1.0 : 0.0, false, true};
      if (auto c = e.as_const()) return Scalar{static_cast<double>(*c), false, false};
      fail(fmt::format("argument '{}' = {} is symbolic; only concrete scalars are supported", name,
                       e.to_string()));
    }
    default:
      break;
  }
  fail(fmt::format("argument '{}' is {}, expected a scalar", name, a->kind));
}

bool AtenNode::bool_(std::string_view name, std::optional<bool> fallback) const {
  const Pt2Argument* a = find(name);
  if (!a || a->kind == "none") {
    if (fallback) return *fallback;
    fail(fmt::format("missing argument '{}'", name));
  }
  if (a->values.size() != 1)
    fail(fmt::format("argument '{}' is {}, expected a bool", name, a->kind));
  const Pt2Value& v = a->values[0];
  if (v.kind == Pt2Value::Kind::Bool) return v.b;
  if (v.kind == Pt2Value::Kind::Int) return v.i != 0;
  if (v.kind == Pt2Value::Kind::Name) {
    auto it = values_.sym_bools.find(v.str);
    if (it != values_.sym_bools.end()) {
      if (auto c = it->second.as_const()) return *c != 0;
      fail(fmt::format("argument '{}' = {} is a symbolic bool; it must be concrete here", name,
                       it->second.to_string()));
    }
  }
  fail(fmt::format("argument '{}' is not a bool", name));
}

std::optional<Expr> AtenNode::sym_value(std::string_view name) const {
  const Pt2Argument* a = find(name);
  if (!a || a->values.size() != 1) return std::nullopt;
  if (a->kind != "int" && a->kind != "bool" && a->kind != "sym_int" && a->kind != "sym_bool")
    return std::nullopt;
  const Pt2Value& v = a->values[0];
  if (v.kind == Pt2Value::Kind::Name && !values_.sym_ints.count(v.str) &&
      !values_.sym_bools.count(v.str))
    return std::nullopt;  // a SymFloat or unknown name: not an integer
  return value_to_expr(v, name);
}

const Pt2TensorMeta& AtenNode::arg_meta(std::string_view name) const {
  const Pt2Argument& a = need(name);
  const std::string t = a.tensor_name();
  auto it = program_.graph.tensor_values.find(t);
  if (t.empty() || it == program_.graph.tensor_values.end())
    fail(fmt::format("argument '{}' has no tensor metadata", name));
  return it->second;
}

std::string AtenNode::str(std::string_view name, std::optional<std::string> fallback) const {
  const Pt2Argument* a = find(name);
  if (!a || a->kind == "none") {
    if (fallback) return *fallback;
    fail(fmt::format("missing argument '{}'", name));
  }
  if (a->values.size() != 1 || a->values[0].kind != Pt2Value::Kind::String)
    fail(fmt::format("argument '{}' is {}, expected a string", name, a->kind));
  return a->values[0].str;
}

std::optional<DType> AtenNode::dtype(std::string_view name) const {
  if (!has(name)) return std::nullopt;
  const Pt2Argument& a = need(name);
  if (a.values.size() != 1 || a.values[0].kind != Pt2Value::Kind::Int)
    fail(fmt::format("argument '{}' is {}, expected a dtype", name, a.kind));
  const int code = static_cast<int>(a.values[0].i);
  auto dt = dtype_from_torch_scalar_type(code);
  if (!dt) fail(fmt::format("dtype {} is not supported", torch_scalar_type_name(code)));
  return dt;
}

const Pt2TensorMeta& AtenNode::out_meta(size_t i) const {
  if (i >= node_.outputs.size()) fail(fmt::format("has no output {}", i));
  const std::string name = node_.outputs[i].tensor_name();
  auto it = program_.graph.tensor_values.find(name);
  if (name.empty() || it == program_.graph.tensor_values.end())
    fail(fmt::format("output {} has no tensor metadata", i));
  return it->second;
}

DType AtenNode::out_dtype(size_t i) const {
  const Pt2TensorMeta& m = out_meta(i);
  if (!m.dtype)
    fail(fmt::format("output dtype {} is not supported", torch_scalar_type_name(m.scalar_type)));
  return *m.dtype;
}

std::vector<Expr> AtenNode::out_dims(size_t i) const {
  std::vector<Expr> dims;
  for (const Pt2SymInt& s : out_meta(i).sizes) dims.push_back(sym_int_expr(s));
  return dims;
}

bool AtenNode::output_is_tensor(size_t i) const {
  return i < node_.outputs.size() && !node_.outputs[i].tensor_name().empty();
}

void AtenNode::set_output(GraphTensor t, size_t i) {
  if (i >= node_.outputs.size()) fail(fmt::format("has no output {}", i));
  // A value read from data (item()) is a graph tensor, not a size: a shape built from it has no
  // value at run time.
  for (const Expr& d : t.dims())
    for (const std::string& sym : d.symbols())
      if (values_.data_scalars.count(sym))
        fail(fmt::format("its shape {} depends on '{}', a value read from data (item()); luminal takes such "
                         "values only as the sizes of a split that feeds embedding_bag (KeyedJaggedTensor.to_dict)",
                         shape_string(t.dims()), sym));
  results_[i] = t;
  const std::string name = node_.outputs[i].tensor_name();
  if (!name.empty()) values_.tensors[name] = std::move(t);
}

const std::vector<Pt2Value>& AtenNode::tensor_list_outputs(size_t made) const {
  if (node_.outputs.size() != 1 || node_.outputs[0].kind != "tensors")
    fail("does not return a Tensor[]");
  const std::vector<Pt2Value>& out = node_.outputs[0].values;
  if (out.size() != made) fail(fmt::format("returns {} tensors, the lowering made {}", out.size(), made));
  return out;
}

void AtenNode::set_tensor_list(const std::vector<GraphTensor>& ts) {
  const std::vector<Pt2Value>& out = tensor_list_outputs(ts.size());
  for (size_t k = 0; k < ts.size(); ++k) values_.tensors[out[k].str] = ts[k];
}

std::optional<Segment> AtenNode::segment(std::string_view name) const {
  const Pt2Argument& a = need(name);
  if (a.kind != "tensor" || a.values.empty() || a.values[0].kind != Pt2Value::Kind::Name) return std::nullopt;
  auto it = values_.segments.find(a.values[0].str);
  if (it == values_.segments.end()) return std::nullopt;
  return it->second;
}

void AtenNode::set_segment_list(const std::vector<Segment>& segs) {
  const std::vector<Pt2Value>& out = tensor_list_outputs(segs.size());
  for (size_t k = 0; k < segs.size(); ++k) values_.segments[out[k].str] = segs[k];
}

std::string AtenNode::out_symbol() const {
  if (node_.outputs.size() != 1 || node_.outputs[0].values.empty()) return "";
  auto it = program_.graph.sym_int_values.find(node_.outputs[0].values[0].str);
  return it == program_.graph.sym_int_values.end() ? "" : it->second.expr;
}

void AtenNode::set_sym_int(Expr e) {
  if (node_.outputs.size() != 1 || node_.outputs[0].values.empty()) fail("has no SymInt output");
  values_.sym_ints[node_.outputs[0].values[0].str] = std::move(e);
}

void AtenNode::set_sym_float(double v) {
  if (node_.outputs.size() != 1 || node_.outputs[0].values.empty()) fail("has no SymFloat output");
  values_.sym_floats[node_.outputs[0].values[0].str] = v;
}

void AtenNode::set_sym_bool(Expr v) {
  if (node_.outputs.size() != 1 || node_.outputs[0].values.empty()) fail("has no SymBool output");
  values_.sym_bools[node_.outputs[0].values[0].str] = std::move(v);
}

}  // namespace luminal::aten
