// A recursive-descent parser for the integer expressions torch.export serializes (sympy's str()).
#include "frontend/aten/sym_expr.h"

#include <cctype>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

namespace luminal::aten {
namespace {

class Parser {
 public:
  explicit Parser(std::string_view s) : s_(s) {}

  Expr parse() {
    Expr e = sum();
    skip_space();
    if (pos_ != s_.size()) fail("unexpected text");
    return e;
  }

 private:
  // sum := product (('+' | '-') product)*
  Expr sum() {
    Expr e = product();
    for (;;) {
      if (eat("+")) {
        e = e + product();
      } else if (eat("-")) {
        e = e - product();
      } else {
        return e;
      }
    }
  }

  // product := unary (('*' | '//' | '%') unary)*   ('//' is floor division; sizes are >= 0)
  Expr product() {
    Expr e = unary();
    for (;;) {
      if (eat("//")) {
        e = e / unary();
      } else if (eat("*")) {
        if (peek('*')) fail("powers are not supported");
        e = e * unary();
      } else if (eat("%")) {
        e = e % unary();
      } else {
        return e;
      }
    }
  }

  Expr unary() {
    if (eat("-")) return Expr(0) - unary();
    return atom();
  }

  Expr atom() {
    skip_space();
    if (eat("(")) {
      Expr e = sum();
      expect(")");
      return e;
    }
    if (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) return number();
    const std::string name = identifier();
    if (name.empty()) fail("expected a number, a symbol or '('");
    skip_space();
    if (!peek('(')) return Expr::sym(name);
    eat("(");
    if (name == "Symbol") return symbol();  // srepr: Symbol('s77', positive=True, integer=True)
    if (name == "Integer") {                // srepr: Integer(-1)
      const bool neg = eat("-");
      Expr v = number();
      expect(")");
      return neg ? Expr(0) - v : v;
    }
    std::vector<Expr> args{sum()};
    while (eat(",")) args.push_back(sum());
    expect(")");
    return call(name, args);
  }

  // The name, then keyword flags up to the closing parenthesis.
  Expr symbol() {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
      fail("expected a quoted symbol name");
    const char quote = s_[pos_++];
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != quote) ++pos_;
    if (pos_ >= s_.size()) fail("unterminated symbol name");
    std::string name(s_.substr(start, pos_ - start));
    ++pos_;
    while (eat(",")) {
      if (identifier().empty()) fail("expected a keyword");
      expect("=");
      if (identifier().empty()) fail("expected a keyword value");
    }
    expect(")");
    return Expr::sym(name);
  }

  Expr call(const std::string& f, const std::vector<Expr>& a) {
    auto binary = [&](auto op) {
      if (a.size() != 2) fail(f + " takes two arguments");
      return op(a[0], a[1]);
    };
    if (f == "Max" || f == "Min") {
      if (a.size() < 2) fail(f + " takes at least two arguments");
      Expr e = a[0];
      for (size_t i = 1; i < a.size(); ++i) e = f == "Max" ? max(e, a[i]) : min(e, a[i]);
      return e;
    }
    if (f == "Add" || f == "Mul") {  // srepr: n-ary
      Expr e = a[0];
      for (size_t i = 1; i < a.size(); ++i) e = f == "Add" ? e + a[i] : e * a[i];
      return e;
    }
    if (f == "FloorDiv") return binary([](const Expr& x, const Expr& y) { return x / y; });
    if (f == "Mod" || f == "PythonMod")
      return binary([](const Expr& x, const Expr& y) { return x % y; });
    // ceil(x / y) for the non-negative sizes shapes hold.
    if (f == "CeilDiv") return binary([](const Expr& x, const Expr& y) { return (x + y - 1) / y; });
    fail("unsupported function " + f);
  }

  Expr number() {
    int64_t v = 0;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) {
      if (v > (INT64_MAX - 9) / 10) fail("integer overflow");
      v = v * 10 + (s_[pos_++] - '0');
    }
    return Expr(v);
  }

  std::string identifier() {
    skip_space();
    size_t start = pos_;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_'))
      ++pos_;
    return std::string(s_.substr(start, pos_ - start));
  }

  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool peek(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool eat(std::string_view tok) {
    skip_space();
    if (s_.substr(pos_, tok.size()) != tok) return false;
    // "*" must not swallow the first half of "**", nor "/" of "//".
    pos_ += tok.size();
    return true;
  }
  void expect(std::string_view tok) {
    if (!eat(tok)) fail(fmt::format("expected '{}'", tok));
  }
  [[noreturn]] void fail(const std::string& why) const {
    throw std::invalid_argument(fmt::format(
        "[aten] cannot parse size expression '{}': {} at column {}", s_, why, pos_ + 1));
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

Expr parse_sym_expr(std::string_view text) { return Parser(text).parse(); }

}  // namespace luminal::aten
