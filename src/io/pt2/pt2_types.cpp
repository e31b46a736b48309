// Small helpers of the public .pt2 structs: dtype codes, printing symbols, tensor layouts.
#include <cctype>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>

#include "luminal/pt2.h"

namespace luminal {

namespace {

/// torch ScalarType codes as serialized (schema.py ScalarType) with torch's dtype names.
struct ScalarTypeRow {
  int code;
  const char* name;
  std::optional<DType> dtype;
};
constexpr ScalarTypeRow kScalarTypes[] = {
    {1, "uint8", DType::U8},
    {2, "int8", DType::I8},
    {3, "int16", std::nullopt},
    {4, "int32", DType::I32},
    {5, "int64", DType::I64},
    {6, "float16", DType::F16},
    {7, "float32", DType::F32},
    {8, "float64", DType::F64},
    {9, "complex32", std::nullopt},
    {10, "complex64", std::nullopt},
    {11, "complex128", std::nullopt},
    {12, "bool", DType::Bool},
    {13, "bfloat16", DType::BF16},
    {28, "uint16", std::nullopt},
    {29, "float8_e4m3fn", std::nullopt},
    {30, "float8_e5m2", std::nullopt},
    {31, "float8_e4m3fnuz", std::nullopt},
    {32, "float8_e5m2fnuz", std::nullopt},
    {33, "float8_e8m0fnu", std::nullopt},
    {34, "uint32", std::nullopt},
    {35, "uint64", std::nullopt},
};

/// Rewrites sympy's srepr ("Mul(Integer(2), Symbol('s0', integer=True))") as "2*s0". Returns
/// false on anything it does not follow, and the caller keeps the raw text.
struct SreprPrinter {
  std::string_view s;
  size_t pos = 0;

  void skip_ws() {
    while (pos < s.size() && s[pos] == ' ') ++pos;
  }
  bool eat(char c) {
    skip_ws();
    if (pos < s.size() && s[pos] == c) return ++pos, true;
    return false;
  }
  std::string word() {
    skip_ws();
    size_t b = pos;
    while (pos < s.size() && (std::isalnum(static_cast<unsigned char>(s[pos])) || s[pos] == '_' ||
                              s[pos] == '-' || s[pos] == '.'))
      ++pos;
    return std::string(s.substr(b, pos - b));
  }
  /// One term; `out` receives its infix form; `sum` is set for Add (parenthesized under Mul).
  bool term(std::string& out, bool& sum, int depth) {
    if (depth > 32) return false;
    skip_ws();
    sum = false;
    if (pos < s.size() && s[pos] == '\'') {
      size_t end = s.find('\'', pos + 1);
      if (end == std::string_view::npos) return false;
      out = std::string(s.substr(pos + 1, end - pos - 1));
      pos = end + 1;
      return true;
    }
    std::string head = word();
    if (head.empty()) return false;
    if (!eat('(')) return out = head, true;  // a bare number or keyword value
    std::vector<std::string> args;
    std::vector<bool> sums;
    while (!eat(')')) {
      if (!args.empty() && !eat(',')) return false;
      size_t save = pos;
      std::string key = word();
      if (!key.empty() && eat('=')) {  // keyword argument (integer=True): dropped
        std::string v;
        bool ignored;
        if (!term(v, ignored, depth + 1)) return false;
        continue;
      }
      pos = save;
      std::string a;
      bool a_sum;
      if (!term(a, a_sum, depth + 1)) return false;
      args.push_back(a);
      sums.push_back(a_sum);
    }
    return combine(head, args, sums, out, sum);
  }
  static bool combine(const std::string& head, const std::vector<std::string>& args,
                      const std::vector<bool>& sums, std::string& out, bool& sum) {
    auto join = [&](const char* sep, bool paren_sums) {
      std::string r;
      for (size_t i = 0; i < args.size(); ++i) {
        if (i) r += sep;
        r += paren_sums && sums[i] ? "(" + args[i] + ")" : args[i];
      }
      return r;
    };
    if ((head == "Symbol" || head == "Integer") && args.size() == 1) {
      out = args[0];
    } else if (head == "Add") {
      out = join(" + ", false);
      sum = true;
    } else if (head == "Mul") {
      out = join("*", true);
    } else if (head == "FloorDiv" && args.size() == 2) {
      out = join("//", true);
    } else if ((head == "Mod" || head == "PythonMod") && args.size() == 2) {
      out = join(" % ", true);
    } else {
      std::string lower = head;
      for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      out = lower + "(" + join(", ", false) + ")";
    }
    return true;
  }
};

}  // namespace

std::optional<DType> dtype_from_torch_scalar_type(int code) {
  for (const auto& r : kScalarTypes) {
    if (r.code == code) return r.dtype;
  }
  return std::nullopt;
}

std::string torch_scalar_type_name(int code) {
  for (const auto& r : kScalarTypes) {
    if (r.code == code) return r.name;
  }
  return fmt::format("scalar_type({})", code);
}

std::string Pt2SymInt::str() const {
  if (!is_symbolic()) return std::to_string(value);
  SreprPrinter p{expr};
  std::string out;
  bool sum = false;
  if (p.term(out, sum, 0) && (p.skip_ws(), p.pos == expr.size())) return out;
  return expr;
}

std::string Pt2Argument::tensor_name() const {
  if ((kind == "tensor" || kind == "optional_tensor") && values.size() == 1 &&
      values[0].kind == Pt2Value::Kind::Name)
    return values[0].str;
  return {};
}

std::string Pt2Node::stack_trace() const {
  auto it = metadata.find("stack_trace");
  return it == metadata.end() ? std::string() : it->second;
}

bool Pt2Tensor::is_contiguous() const {
  int64_t expected = 1;
  for (size_t k = shape.size(); k-- > 0;) {
    if (shape[k] == 1) continue;  // any stride is fine on a size-1 dim
    if (shape[k] == 0) return true;
    if (strides[k] != expected) return false;
    expected *= shape[k];
  }
  return true;
}

std::span<const std::byte> Pt2Tensor::contiguous_bytes() const {
  if (device_data != nullptr)
    throw std::runtime_error(
        fmt::format("[pt2] tensor '{}' lives in device memory (no host bytes)", name));
  if (!is_contiguous())
    throw std::runtime_error(fmt::format("[pt2] tensor '{}' is not contiguous", name));
  size_t numel = 1;
  for (int64_t d : shape) numel *= static_cast<size_t>(d);
  const size_t es = dtype_size(dtype);
  // open() checked that the strided extent fits the storage, which covers this dense range.
  if (numel == 0) return {};
  return storage.subspan(static_cast<size_t>(storage_offset) * es, numel * es);
}

}  // namespace luminal
