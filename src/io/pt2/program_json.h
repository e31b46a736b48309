// JSON -> structs for the serialized ExportedProgram (internal to the .pt2 reader).
// torch writes a tagged union as a one-key object {"as_tensor": {...}} and enums as integers
// (torch/_export/serde/serialize.py, _dataclass_to_dict).
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "luminal/pt2.h"

namespace luminal::io::pt2 {

/// The schema major version this reader understands (torch 2.5 ... 2.15 write 8).
inline constexpr int kSchemaMajor = 8;

/// Parses a whole ExportedProgram; throws std::runtime_error saying where the JSON is malformed.
Pt2Program parse_program(const nlohmann::json& j);
/// Parses one Argument; scalars and flat lists are decoded, nested kinds keep their JSON text.
Pt2Argument parse_argument(const nlohmann::json& j, const std::string& where);
/// Parses one SymInt ({"as_int": n} or {"as_expr": {"expr_str": ..., "hint": ...}}).
Pt2SymInt parse_sym_int(const nlohmann::json& j, const std::string& where);
/// Parses one TensorMeta; `where` prefixes error messages.
Pt2TensorMeta parse_tensor_meta(const nlohmann::json& j, const std::string& where);

/// Throws std::runtime_error("<where>: <problem>").
[[noreturn]] void bad_json(const std::string& where, const std::string& problem);
/// j[key] of an object, or an error naming the missing key.
const nlohmann::json& member(const nlohmann::json& j, const char* key, const std::string& where);
/// An array, or an error.
const nlohmann::json& as_array(const nlohmann::json& j, const std::string& where);
/// An integer (bools are refused), or an error.
int64_t as_int(const nlohmann::json& j, const std::string& where);
/// A string, or an error.
const std::string& as_str(const nlohmann::json& j, const std::string& where);
/// A bool, or an error.
bool as_bool(const nlohmann::json& j, const std::string& where);
/// A union object's single tag and value, or an error.
std::pair<std::string, const nlohmann::json*> union_of(const nlohmann::json& j,
                                                       const std::string& where);

}  // namespace luminal::io::pt2
