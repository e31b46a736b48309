// Symbolic integer expressions over named dynamic dimensions.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace luminal {

/// Values of dynamic dimensions by name, e.g. {{"batch", 2048}}.
using DynMap = std::map<std::string, int64_t, std::less<>>;

/// An immutable symbolic integer expression: constants, named symbols and
/// + - * / % min max < (C semantics for / and % on the non-negative values shapes use).
class Expr {
 public:
  /// Node kinds; Lt yields 1 or 0.
  enum class Kind : uint8_t { Const, Sym, Add, Sub, Mul, Div, Mod, Min, Max, Lt };

  /// The constant 0.
  Expr() : Expr(int64_t{0}) {}
  /// A constant.
  Expr(int64_t v);  // NOLINT(google-explicit-constructor): shapes mix ints and symbols freely
  /// A constant (int literal convenience).
  Expr(int v) : Expr(int64_t{v}) {}  // NOLINT(google-explicit-constructor)
  /// A named symbol ('s', "batch").
  static Expr sym(std::string name);

  /// The kind of the root node.
  Kind kind() const;
  /// The constant value, if this expression is a constant.
  std::optional<int64_t> as_const() const;
  /// The symbol name, if this expression is a single symbol.
  std::optional<std::string> as_sym() const;
  /// Evaluates against dyn; throws "[expr] unbound symbol 'x'" when a symbol is missing.
  int64_t eval(const DynMap& dyn) const;
  /// Names of all symbols, sorted, unique.
  std::vector<std::string> symbols() const;
  /// Readable infix form: "((batch * 4) + 1)".
  std::string to_string() const;
  /// C/CUDA code with int64 arithmetic; each symbol printed as sym_prefix + name.
  std::string to_code(const std::string& sym_prefix = "") const;
  /// Structural equality after simplification.
  bool same(const Expr& other) const;

  friend Expr operator+(const Expr& a, const Expr& b);
  friend Expr operator-(const Expr& a, const Expr& b);
  friend Expr operator*(const Expr& a, const Expr& b);
  friend Expr operator/(const Expr& a, const Expr& b);
  friend Expr operator%(const Expr& a, const Expr& b);
  friend Expr min(const Expr& a, const Expr& b);
  friend Expr max(const Expr& a, const Expr& b);
  friend Expr lt(const Expr& a, const Expr& b);

  /// Children of the root node (empty for Const and Sym).
  std::vector<Expr> children() const;

 private:
  struct Node;
  explicit Expr(std::shared_ptr<const Node> n) : node_(std::move(n)) {}
  static Expr make(Kind k, const Expr& a, const Expr& b);
  std::shared_ptr<const Node> node_;
};

/// Evaluates each expression of a shape.
std::vector<int64_t> eval_all(const std::vector<Expr>& exprs, const DynMap& dyn);
/// True when a and b have the same length and each pair is the same() expression.
bool same_exprs(const std::vector<Expr>& a, const std::vector<Expr>& b);
/// "[2, batch, 4]".
std::string shape_string(const std::vector<Expr>& exprs);
/// Product of all expressions (1 for an empty list).
Expr product(const std::vector<Expr>& exprs);

}  // namespace luminal
