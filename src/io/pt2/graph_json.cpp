// Serialized graph, signature and program -> structs (schema: torch/_export/serde/schema.py).
#include <cstdint>

#include <fmt/format.h>

#include "io/pt2/program_json.h"

namespace luminal::io::pt2 {

using nlohmann::json;

namespace {

Pt2Node parse_node(const json& j, const std::string& where) {
  Pt2Node n;
  n.target = as_str(member(j, "target", where), where + ".target");
  const std::string at = fmt::format("{} ({})", where, n.target);
  auto name = j.find("name");
  if (name != j.end() && name->is_string()) n.name = name->get<std::string>();
  for (const json& in : as_array(member(j, "inputs", at), at + ".inputs")) {
    Pt2NamedArgument na;
    na.name = as_str(member(in, "name", at + ".inputs"), at + ".inputs");
    na.arg = parse_argument(member(in, "arg", at + ".inputs"), at + ".inputs." + na.name);
    auto kind = in.find("kind");
    na.keyword = kind != in.end() && kind->is_number_integer() && kind->get<int64_t>() == 2;
    n.inputs.push_back(std::move(na));
  }
  for (const json& out : as_array(member(j, "outputs", at), at + ".outputs"))
    n.outputs.push_back(parse_argument(out, at + ".outputs"));
  auto meta = j.find("metadata");
  if (meta != j.end() && meta->is_object()) {
    for (const auto& [k, v] : meta->items()) {
      if (v.is_string()) n.metadata.emplace(k, v.get<std::string>());
    }
  }
  return n;
}

Pt2Graph parse_graph(const json& j) {
  const std::string w = "graph_module.graph";
  Pt2Graph g;
  for (const json& a : as_array(member(j, "inputs", w), w + ".inputs"))
    g.inputs.push_back(parse_argument(a, w + ".inputs"));
  for (const json& a : as_array(member(j, "outputs", w), w + ".outputs"))
    g.outputs.push_back(parse_argument(a, w + ".outputs"));
  const json& nodes = as_array(member(j, "nodes", w), w + ".nodes");
  for (size_t i = 0; i < nodes.size(); ++i)
    g.nodes.push_back(parse_node(nodes[i], fmt::format("{}.nodes[{}]", w, i)));
  const json& tv = member(j, "tensor_values", w);
  if (!tv.is_object()) bad_json(w + ".tensor_values", "expected an object");
  for (const auto& [name, meta] : tv.items())
    g.tensor_values.emplace(name, parse_tensor_meta(meta, "tensor_values." + name));
  auto sv = j.find("sym_int_values");
  if (sv != j.end() && sv->is_object()) {
    for (const auto& [name, s] : sv->items())
      g.sym_int_values.emplace(name, parse_sym_int(s, "sym_int_values." + name));
  }
  auto single = j.find("is_single_tensor_return");
  if (single != j.end() && single->is_boolean()) g.is_single_tensor_return = single->get<bool>();
  return g;
}

/// The name of a TensorArgument / TokenArgument / CustomObjArgument object.
std::string arg_name(const json& arg, const std::string& where) {
  return as_str(member(arg, "name", where), where + ".name");
}

Pt2Argument tensor_arg(const std::string& name) {
  Pt2Argument a;
  a.kind = "tensor";
  a.values.push_back(Pt2Value{Pt2Value::Kind::Name, name});
  return a;
}

Pt2InputSpec parse_input_spec(const json& j, const std::string& where) {
  auto [tag, v] = union_of(j, where);
  Pt2InputSpec s;
  const std::string w = where + "." + tag;
  if (tag == "user_input") {
    s.kind = Pt2InputKind::UserInput;
    s.arg = parse_argument(member(*v, "arg", w), w + ".arg");
    if (!s.arg.values.empty()) s.name = s.arg.values[0].str;
    return s;
  }
  if (tag == "constant_input") {
    s.kind = Pt2InputKind::ConstantInput;
    s.name = as_str(member(*v, "name", w), w + ".name");
    return s;
  }
  static const std::pair<const char*, std::pair<Pt2InputKind, const char*>> kinds[] = {
      {"parameter", {Pt2InputKind::Parameter, "parameter_name"}},
      {"buffer", {Pt2InputKind::Buffer, "buffer_name"}},
      {"tensor_constant", {Pt2InputKind::TensorConstant, "tensor_constant_name"}},
      {"custom_obj", {Pt2InputKind::CustomObj, "custom_obj_name"}},
      {"token", {Pt2InputKind::Token, nullptr}},
  };
  for (const auto& [t, kt] : kinds) {
    if (tag != t) continue;
    s.kind = kt.first;
    s.name = arg_name(member(*v, "arg", w), w + ".arg");
    s.arg = tensor_arg(s.name);
    if (s.kind == Pt2InputKind::CustomObj) s.arg.kind = "custom_obj";
    if (kt.second) s.target = as_str(member(*v, kt.second, w), w + "." + kt.second);
    auto p = v->find("persistent");
    if (p != v->end() && p->is_boolean()) s.persistent = p->get<bool>();
    return s;
  }
  bad_json(where, fmt::format("unknown input spec kind '{}'", tag));
}

Pt2OutputSpec parse_output_spec(const json& j, const std::string& where) {
  auto [tag, v] = union_of(j, where);
  Pt2OutputSpec s;
  const std::string w = where + "." + tag;
  static const std::pair<const char*, std::pair<Pt2OutputKind, const char*>> kinds[] = {
      {"user_output", {Pt2OutputKind::UserOutput, nullptr}},
      {"loss_output", {Pt2OutputKind::LossOutput, nullptr}},
      {"buffer_mutation", {Pt2OutputKind::BufferMutation, "buffer_name"}},
      {"gradient_to_parameter", {Pt2OutputKind::GradientToParameter, "parameter_name"}},
      {"gradient_to_user_input", {Pt2OutputKind::GradientToUserInput, "user_input_name"}},
      {"user_input_mutation", {Pt2OutputKind::UserInputMutation, "user_input_name"}},
      {"token", {Pt2OutputKind::Token, nullptr}},
      {"parameter_mutation", {Pt2OutputKind::ParameterMutation, "parameter_name"}},
  };
  for (const auto& [t, kt] : kinds) {
    if (tag != t) continue;
    s.kind = kt.first;
    const json& arg = member(*v, "arg", w);
    if (s.kind == Pt2OutputKind::UserOutput) {
      s.arg = parse_argument(arg, w + ".arg");
      if (!s.arg.values.empty()) s.name = s.arg.values[0].str;
    } else {
      s.name = arg_name(arg, w + ".arg");
      s.arg = tensor_arg(s.name);
    }
    if (kt.second) s.target = as_str(member(*v, kt.second, w), w + "." + kt.second);
    return s;
  }
  bad_json(where, fmt::format("unknown output spec kind '{}'", tag));
}

std::optional<int64_t> optional_int(const json& j, const char* key) {
  auto it = j.find(key);
  // torch writes null for an unbounded side; anything not an int64 is treated the same.
  if (it == j.end() || !it->is_number_integer()) return std::nullopt;
  if (it->is_number_unsigned() && it->get<uint64_t>() > uint64_t(INT64_MAX)) return std::nullopt;
  return it->get<int64_t>();
}

}  // namespace

Pt2Program parse_program(const json& j) {
  Pt2Program p;
  const json& version = member(j, "schema_version", "program");
  p.schema_major =
      static_cast<int>(as_int(member(version, "major", "schema_version"), "schema_version.major"));
  p.schema_minor =
      static_cast<int>(as_int(member(version, "minor", "schema_version"), "schema_version.minor"));
  if (p.schema_major != kSchemaMajor)
    bad_json("schema_version", fmt::format("unsupported schema version {}.{} (this reader knows "
                                           "major version {})",
                                           p.schema_major, p.schema_minor, kSchemaMajor));
  const json& gm = member(j, "graph_module", "program");
  p.graph = parse_graph(member(gm, "graph", "graph_module"));
  const json& sig = member(gm, "signature", "graph_module");
  for (const json& s : as_array(member(sig, "input_specs", "signature"), "signature.input_specs"))
    p.input_specs.push_back(parse_input_spec(s, "signature.input_specs"));
  for (const json& s : as_array(member(sig, "output_specs", "signature"), "signature.output_specs"))
    p.output_specs.push_back(parse_output_spec(s, "signature.output_specs"));
  auto rc = j.find("range_constraints");
  if (rc != j.end() && rc->is_object()) {
    for (const auto& [sym, r] : rc->items()) {
      p.range_constraints.emplace(
          sym, Pt2RangeConstraint{optional_int(r, "min_val"), optional_int(r, "max_val")});
    }
  }
  auto ops = j.find("opset_version");
  if (ops != j.end() && ops->is_object()) {
    for (const auto& [name, v] : ops->items())
      p.opset_version.emplace(name, as_int(v, "opset_version." + name));
  }
  auto tv = j.find("torch_version");
  if (tv != j.end() && tv->is_string()) p.torch_version = tv->get<std::string>();
  return p;
}

}  // namespace luminal::io::pt2
