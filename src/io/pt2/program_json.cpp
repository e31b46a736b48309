// Serialized ExportedProgram JSON -> Pt2Program (schema: torch/_export/serde/schema.py).
#include "io/pt2/program_json.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace luminal::io::pt2 {

using nlohmann::json;

void bad_json(const std::string& where, const std::string& problem) {
  throw std::runtime_error(fmt::format("{}: {}", where, problem));
}

const json& member(const json& j, const char* key, const std::string& where) {
  if (!j.is_object()) bad_json(where, fmt::format("expected an object, got {}", j.type_name()));
  auto it = j.find(key);
  if (it == j.end()) bad_json(where, fmt::format("missing '{}'", key));
  return *it;
}

int64_t as_int(const json& j, const std::string& where) {
  if (j.is_number_unsigned() && j.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()))
    bad_json(where, "integer out of int64 range");
  if (!j.is_number_integer())
    bad_json(where, fmt::format("expected an integer, got {}", j.type_name()));
  return j.get<int64_t>();
}

const std::string& as_str(const json& j, const std::string& where) {
  if (!j.is_string()) bad_json(where, fmt::format("expected a string, got {}", j.type_name()));
  return j.get_ref<const std::string&>();
}

bool as_bool(const json& j, const std::string& where) {
  if (!j.is_boolean()) bad_json(where, fmt::format("expected a bool, got {}", j.type_name()));
  return j.get<bool>();
}

std::pair<std::string, const json*> union_of(const json& j, const std::string& where) {
  if (!j.is_object() || j.size() != 1)
    bad_json(where, fmt::format("expected a one-key union object, got {}",
                                j.is_object() ? fmt::format("{} keys", j.size()) : j.type_name()));
  return {j.begin().key(), &j.begin().value()};
}

const json& as_array(const json& j, const std::string& where) {
  if (!j.is_array()) bad_json(where, fmt::format("expected an array, got {}", j.type_name()));
  return j;
}

namespace {

/// torch writes non-finite floats as the strings "Infinity", "-Infinity" and "NaN".
double as_float(const json& j, const std::string& where) {
  if (j.is_number()) return j.get<double>();
  if (j.is_string()) {
    const auto& s = j.get_ref<const std::string&>();
    if (s == "Infinity") return std::numeric_limits<double>::infinity();
    if (s == "-Infinity") return -std::numeric_limits<double>::infinity();
    if (s == "NaN") return std::numeric_limits<double>::quiet_NaN();
  }
  bad_json(where, fmt::format("expected a float, got {}", j.type_name()));
}

}  // namespace

Pt2SymInt parse_sym_int(const json& j, const std::string& where) {
  auto [tag, v] = union_of(j, where);
  Pt2SymInt s;
  if (tag == "as_int") {
    s.value = as_int(*v, where);
  } else if (tag == "as_expr") {
    s.expr = as_str(member(*v, "expr_str", where), where);
    if (s.expr.empty()) bad_json(where, "empty symbolic expression");
    auto hint = v->find("hint");
    if (hint != v->end() && !hint->is_null()) {
      auto [htag, hv] = union_of(*hint, where + ".hint");
      if (htag == "as_int") {
        s.value = as_int(*hv, where + ".hint");
        s.has_hint = true;
      }
    }
  } else {
    bad_json(where, fmt::format("unknown SymInt kind '{}'", tag));
  }
  return s;
}

namespace {

/// Refuses JSON nested deeper than a real program could be, before dump() recurses into it.
void check_depth(const json& root, const std::string& where) {
  constexpr size_t kMaxDepth = 200;
  std::vector<std::pair<const json*, size_t>> stack{{&root, 1}};
  while (!stack.empty()) {
    auto [j, depth] = stack.back();
    stack.pop_back();
    if (depth > kMaxDepth) bad_json(where, fmt::format("nested deeper than {}", kMaxDepth));
    if (j->is_structured()) {
      for (const json& c : *j) stack.push_back({&c, depth + 1});
    }
  }
}

/// One union element ({"as_name": ...}, {"as_int": ...}, {"as_tensor": {...}}, ...) as a value.
Pt2Value parse_item(const json& j, const std::string& where) {
  auto [tag, v] = union_of(j, where);
  Pt2Value out;
  if (tag == "as_name") {
    out.kind = Pt2Value::Kind::Name;
    out.str = as_str(*v, where);
  } else if (tag == "as_tensor") {
    out.kind = Pt2Value::Kind::Name;
    out.str = as_str(member(*v, "name", where), where);
  } else if (tag == "as_int") {
    out.kind = Pt2Value::Kind::Int;
    out.i = as_int(*v, where);
  } else if (tag == "as_float") {
    out.kind = Pt2Value::Kind::Float;
    out.f = as_float(*v, where);
  } else if (tag == "as_bool") {
    out.kind = Pt2Value::Kind::Bool;
    out.b = as_bool(*v, where);
  } else if (tag != "as_none") {
    bad_json(where, fmt::format("unknown element kind '{}'", tag));
  }
  return out;
}

Pt2Value name_value(const json& tensor_arg, const std::string& where) {
  Pt2Value out;
  out.kind = Pt2Value::Kind::Name;
  out.str = as_str(member(tensor_arg, "name", where), where);
  return out;
}

Pt2Value scalar_value(const json& v, const std::string& where) {
  Pt2Value out;
  if (v.is_boolean()) {
    out.kind = Pt2Value::Kind::Bool;
    out.b = v.get<bool>();
  } else if (v.is_number_integer()) {
    out.kind = Pt2Value::Kind::Int;
    out.i = as_int(v, where);
  } else if (v.is_string()) {
    out.kind = Pt2Value::Kind::String;
    out.str = v.get<std::string>();
  } else {
    out.kind = Pt2Value::Kind::Float;
    out.f = as_float(v, where);
  }
  return out;
}

}  // namespace

Pt2Argument parse_argument(const json& j, const std::string& where) {
  auto [tag, v] = union_of(j, where);
  if (tag.rfind("as_", 0) != 0) bad_json(where, fmt::format("unknown argument kind '{}'", tag));
  Pt2Argument a;
  a.kind = tag.substr(3);
  const std::string& k = a.kind;
  if (k == "none") {
  } else if (k == "tensor" || k == "custom_obj") {
    a.values.push_back(name_value(*v, where));
  } else if (k == "tensors") {
    for (const json& t : as_array(*v, where)) a.values.push_back(name_value(t, where));
  } else if (k == "sym_int" || k == "sym_bool" || k == "sym_float" || k == "optional_tensor") {
    a.values.push_back(parse_item(*v, where));
  } else if (k == "sym_ints" || k == "sym_bools" || k == "sym_floats" || k == "optional_tensors") {
    for (const json& t : as_array(*v, where)) a.values.push_back(parse_item(t, where));
  } else if (k == "float") {  // "Infinity", "-Infinity" and "NaN" are strings in the JSON
    a.values.push_back(Pt2Value{Pt2Value::Kind::Float, {}, 0, as_float(*v, where), false});
  } else if (k == "floats") {
    for (const json& t : as_array(*v, where))
      a.values.push_back(Pt2Value{Pt2Value::Kind::Float, {}, 0, as_float(t, where), false});
  } else if (k == "int" || k == "bool" || k == "string" || k == "scalar_type" ||
             k == "memory_format" || k == "layout" || k == "operator") {
    a.values.push_back(scalar_value(*v, where));
  } else if (k == "ints" || k == "bools" || k == "strings") {
    for (const json& t : as_array(*v, where)) a.values.push_back(scalar_value(t, where));
  } else if (k == "device") {
    a.values.push_back(scalar_value(member(*v, "type", where), where));
    auto idx = v->find("index");
    a.values.push_back(idx == v->end() || idx->is_null() ? Pt2Value{} : scalar_value(*idx, where));
  } else {
    check_depth(*v, where);
    a.json = v->dump();  // graph, complex, int_lists, string_to_argument, ...
  }
  return a;
}

Pt2TensorMeta parse_tensor_meta(const json& j, const std::string& where) {
  Pt2TensorMeta m;
  m.scalar_type = static_cast<int>(as_int(member(j, "dtype", where), where + ".dtype"));
  m.dtype = dtype_from_torch_scalar_type(m.scalar_type);
  for (const json& s : as_array(member(j, "sizes", where), where + ".sizes"))
    m.sizes.push_back(parse_sym_int(s, where + ".sizes"));
  for (const json& s : as_array(member(j, "strides", where), where + ".strides"))
    m.strides.push_back(parse_sym_int(s, where + ".strides"));
  if (m.strides.size() != m.sizes.size())
    bad_json(where, fmt::format("{} sizes but {} strides", m.sizes.size(), m.strides.size()));
  m.storage_offset = parse_sym_int(member(j, "storage_offset", where), where + ".storage_offset");
  const json& dev = member(j, "device", where);
  m.device = as_str(member(dev, "type", where + ".device"), where + ".device");
  auto idx = dev.find("index");
  if (idx != dev.end() && !idx->is_null()) m.device_index = static_cast<int>(as_int(*idx, where));
  auto rg = j.find("requires_grad");
  if (rg != j.end()) m.requires_grad = as_bool(*rg, where + ".requires_grad");
  return m;
}

}  // namespace luminal::io::pt2
