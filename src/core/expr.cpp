// Symbolic integer expressions: construction-time simplification, evaluation and printing.
#include "luminal/expr.h"

#include <fmt/format.h>

#include <algorithm>
#include <climits>
#include <set>
#include <stdexcept>

namespace luminal {

struct Expr::Node {
  Kind kind = Kind::Const;
  int64_t value = 0;
  std::string name;
  Expr a, b;  // children of binary kinds; null handles for leaves (never default Exprs: recursion)
};

namespace {

// Folds a binary op on constants; nullopt when folding must wait (division by zero reaches eval).
std::optional<int64_t> fold(Expr::Kind k, int64_t x, int64_t y) {
  int64_t r = 0;
  switch (k) {
    case Expr::Kind::Add:
      if (__builtin_add_overflow(x, y, &r)) throw std::overflow_error("[expr] overflow in +");
      return r;
    case Expr::Kind::Sub:
      if (__builtin_sub_overflow(x, y, &r)) throw std::overflow_error("[expr] overflow in -");
      return r;
    case Expr::Kind::Mul:
      if (__builtin_mul_overflow(x, y, &r)) throw std::overflow_error("[expr] overflow in *");
      return r;
    case Expr::Kind::Div:
      if (y == 0) return std::nullopt;
      return x / y;
    case Expr::Kind::Mod:
      if (y == 0) return std::nullopt;
      return x % y;
    case Expr::Kind::Min:
      return std::min(x, y);
    case Expr::Kind::Max:
      return std::max(x, y);
    case Expr::Kind::Lt:
      return x < y ? 1 : 0;
    default:
      return std::nullopt;
  }
}

const char* op_symbol(Expr::Kind k) {
  switch (k) {
    case Expr::Kind::Add:
      return "+";
    case Expr::Kind::Sub:
      return "-";
    case Expr::Kind::Mul:
      return "*";
    case Expr::Kind::Div:
      return "/";
    case Expr::Kind::Mod:
      return "%";
    case Expr::Kind::Lt:
      return "<";
    default:
      return "?";
  }
}

// A constant as C code: LL suffix beyond int32 so generated code never overflows int.
std::string const_code(int64_t v) {
  if (v == INT64_MIN) return "(-9223372036854775807LL - 1LL)";
  std::string s = std::to_string(v);
  if (v > INT32_MAX || v < INT32_MIN) s += "LL";
  return v < 0 ? "(" + s + ")" : s;
}

}  // namespace

Expr::Expr(int64_t v) {
  // 0 and 1 are by far the most common constants (default Exprs, strides, pads): share them.
  static const auto zero =
      std::make_shared<const Node>(Node{Kind::Const, 0, {}, Expr(nullptr), Expr(nullptr)});
  static const auto one =
      std::make_shared<const Node>(Node{Kind::Const, 1, {}, Expr(nullptr), Expr(nullptr)});
  if (v == 0) {
    node_ = zero;
  } else if (v == 1) {
    node_ = one;
  } else {
    node_ = std::make_shared<const Node>(Node{Kind::Const, v, {}, Expr(nullptr), Expr(nullptr)});
  }
}

Expr Expr::sym(std::string name) {
  if (name.empty()) throw std::invalid_argument("[expr] symbol name must not be empty");
  return Expr(std::make_shared<const Node>(
      Node{Kind::Sym, 0, std::move(name), Expr(nullptr), Expr(nullptr)}));
}

Expr Expr::make(Kind k, const Expr& a, const Expr& b) {
  return Expr(std::make_shared<const Node>(Node{k, 0, {}, a, b}));
}

Expr::Kind Expr::kind() const { return node_->kind; }

std::optional<int64_t> Expr::as_const() const {
  if (node_->kind == Kind::Const) return node_->value;
  return std::nullopt;
}

std::optional<std::string> Expr::as_sym() const {
  if (node_->kind == Kind::Sym) return node_->name;
  return std::nullopt;
}

std::vector<Expr> Expr::children() const {
  if (node_->kind == Kind::Const || node_->kind == Kind::Sym) return {};
  return {node_->a, node_->b};
}

namespace {

// Evaluates e; root is the whole expression, quoted in error messages.
int64_t eval_node(const Expr& e, const DynMap& dyn, const Expr& root) {
  switch (e.kind()) {
    case Expr::Kind::Const:
      return *e.as_const();
    case Expr::Kind::Sym: {
      auto name = *e.as_sym();
      auto it = dyn.find(name);
      if (it == dyn.end())
        throw std::invalid_argument(
            fmt::format("[expr] unbound symbol '{}' in {}", name, root.to_string()));
      return it->second;
    }
    default:
      break;
  }
  auto ch = e.children();
  int64_t x = eval_node(ch[0], dyn, root), y = eval_node(ch[1], dyn, root);
  auto r = fold(e.kind(), x, y);
  if (!r) throw std::domain_error(fmt::format("[expr] division by zero in {}", root.to_string()));
  return *r;
}

void collect_symbols(const Expr& e, std::set<std::string>& out) {
  if (auto s = e.as_sym()) out.insert(*s);
  for (const auto& c : e.children()) collect_symbols(c, out);
}

}  // namespace

int64_t Expr::eval(const DynMap& dyn) const { return eval_node(*this, dyn, *this); }

std::vector<std::string> Expr::symbols() const {
  std::set<std::string> s;
  collect_symbols(*this, s);
  return {s.begin(), s.end()};
}

std::string Expr::to_string() const {
  const Node& n = *node_;
  switch (n.kind) {
    case Kind::Const:
      return std::to_string(n.value);
    case Kind::Sym:
      return n.name;
    case Kind::Min:
      return fmt::format("min({}, {})", n.a.to_string(), n.b.to_string());
    case Kind::Max:
      return fmt::format("max({}, {})", n.a.to_string(), n.b.to_string());
    default:
      return fmt::format("({} {} {})", n.a.to_string(), op_symbol(n.kind), n.b.to_string());
  }
}

std::string Expr::to_code(const std::string& sym_prefix) const {
  const Node& n = *node_;
  switch (n.kind) {
    case Kind::Const:
      return const_code(n.value);
    case Kind::Sym:
      return sym_prefix + n.name;
    default:
      break;
  }
  std::string a = n.a.to_code(sym_prefix), b = n.b.to_code(sym_prefix);
  switch (n.kind) {
    case Kind::Min:
      return fmt::format("(({0}) < ({1}) ? ({0}) : ({1}))", a, b);
    case Kind::Max:
      return fmt::format("(({0}) > ({1}) ? ({0}) : ({1}))", a, b);
    case Kind::Lt:
      return fmt::format("(({}) < ({}) ? 1LL : 0LL)", a, b);
    default:
      return fmt::format("({} {} {})", a, op_symbol(n.kind), b);
  }
}

bool Expr::same(const Expr& other) const {
  if (node_ == other.node_) return true;
  const Node &x = *node_, &y = *other.node_;
  if (x.kind != y.kind) return false;
  switch (x.kind) {
    case Kind::Const:
      return x.value == y.value;
    case Kind::Sym:
      return x.name == y.name;
    default:
      return x.a.same(y.a) && x.b.same(y.b);
  }
}

namespace {

using K = Expr::Kind;

bool is_const(const std::optional<int64_t>& c, int64_t v) { return c && *c == v; }

// Canonical order of terms/factors: by printed form, so sums and products compare with same().
bool term_less(const Expr& x, const Expr& y) { return x.to_string() < y.to_string(); }

// Splits a sum into non-constant terms and a constant; x - c counts as x + (-c).
void flatten_sum(const Expr& e, std::vector<Expr>& terms, int64_t& c) {
  if (auto v = e.as_const()) {
    c = *fold(K::Add, c, *v);
    return;
  }
  if (e.kind() == K::Add || e.kind() == K::Sub) {
    auto ch = e.children();
    auto rc = ch[1].as_const();
    if (e.kind() == K::Add || rc) {
      flatten_sum(ch[0], terms, c);
      if (e.kind() == K::Add)
        flatten_sum(ch[1], terms, c);
      else
        c = *fold(K::Sub, c, *rc);
      return;
    }
  }
  terms.push_back(e);
}

// Splits a product into non-constant factors and a constant coefficient.
void flatten_product(const Expr& e, std::vector<Expr>& factors, int64_t& c) {
  if (auto v = e.as_const()) {
    c = *fold(K::Mul, c, *v);
  } else if (e.kind() == K::Mul) {
    for (const auto& ch : e.children()) flatten_product(ch, factors, c);
  } else {
    factors.push_back(e);
  }
}

// Removes one occurrence of each of `remove` from `from`; false if some is missing.
bool remove_all(std::vector<Expr>& from, const std::vector<Expr>& remove) {
  for (const auto& r : remove) {
    auto it = std::find_if(from.begin(), from.end(), [&](const Expr& x) { return x.same(r); });
    if (it == from.end()) return false;
    from.erase(it);
  }
  return true;
}

// a / b when b divides a exactly as a product (symbolic factors assumed non-zero), else nullopt.
std::optional<Expr> exact_quotient(const Expr& a, const Expr& b) {
  std::vector<Expr> fa, fb;
  int64_t ka = 1, kb = 1;
  flatten_product(a, fa, ka);
  flatten_product(b, fb, kb);
  if (kb == 0 || ka % kb != 0 || !remove_all(fa, fb)) return std::nullopt;
  Expr q = ka / kb;
  for (const auto& f : fa) q = q * f;
  return q;
}

}  // namespace

Expr operator+(const Expr& a, const Expr& b) {
  auto ca = a.as_const(), cb = b.as_const();
  if (ca && cb) return *fold(K::Add, *ca, *cb);
  if (is_const(ca, 0)) return b;
  if (is_const(cb, 0)) return a;
  std::vector<Expr> terms;
  int64_t c = 0;
  flatten_sum(a, terms, c);
  flatten_sum(b, terms, c);
  if (terms.empty()) return c;
  std::stable_sort(terms.begin(), terms.end(), term_less);
  Expr acc = terms[0];
  for (size_t i = 1; i < terms.size(); ++i) acc = Expr::make(K::Add, acc, terms[i]);
  if (c > 0 || c == INT64_MIN) return Expr::make(K::Add, acc, c);
  if (c < 0) return Expr::make(K::Sub, acc, -c);
  return acc;
}

Expr operator-(const Expr& a, const Expr& b) {
  auto ca = a.as_const(), cb = b.as_const();
  if (ca && cb) return *fold(K::Sub, *ca, *cb);
  if (is_const(cb, 0)) return a;
  if (a.same(b)) return 0;
  if (cb && *cb != INT64_MIN) return a + Expr(-*cb);
  // Cancel terms of b that appear in a: (x + y) - y -> x.
  std::vector<Expr> ta, tb, left_b;
  int64_t c_a = 0, c_b = 0;
  flatten_sum(a, ta, c_a);
  flatten_sum(b, tb, c_b);
  bool cancelled = false;
  for (const auto& t : tb) {
    if (remove_all(ta, {t}))
      cancelled = true;
    else
      left_b.push_back(t);
  }
  if (!cancelled) return Expr::make(K::Sub, a, b);
  Expr pos = *fold(K::Sub, c_a, c_b);
  for (const auto& t : ta) pos = pos + t;
  if (left_b.empty()) return pos;
  Expr neg = 0;
  for (const auto& t : left_b) neg = neg + t;
  return Expr::make(K::Sub, pos, neg);
}

Expr operator*(const Expr& a, const Expr& b) {
  auto ca = a.as_const(), cb = b.as_const();
  if (ca && cb) return *fold(K::Mul, *ca, *cb);
  if (is_const(ca, 0) || is_const(cb, 0)) return 0;
  if (is_const(ca, 1)) return b;
  if (is_const(cb, 1)) return a;
  std::vector<Expr> factors;
  int64_t c = 1;
  flatten_product(a, factors, c);
  flatten_product(b, factors, c);
  if (c == 0) return 0;
  std::stable_sort(factors.begin(), factors.end(), term_less);
  Expr acc = factors[0];
  for (size_t i = 1; i < factors.size(); ++i) acc = Expr::make(K::Mul, acc, factors[i]);
  return c == 1 ? acc : Expr::make(K::Mul, acc, c);
}

Expr operator/(const Expr& a, const Expr& b) {
  auto ca = a.as_const(), cb = b.as_const();
  if (is_const(cb, 0)) return Expr::make(K::Div, a, b);  // kept so eval reports it
  if (ca && cb) return *fold(K::Div, *ca, *cb);
  if (is_const(cb, 1)) return a;
  if (is_const(ca, 0)) return 0;
  if (auto q = exact_quotient(a, b)) return *q;
  // (x / c1) / c2 == x / (c1 * c2) for positive constants (truncation composes).
  if (cb && *cb > 0 && a.kind() == K::Div) {
    auto ch = a.children();
    if (auto c1 = ch[1].as_const(); c1 && *c1 > 0) return ch[0] / (Expr(*c1) * b);
  }
  return Expr::make(K::Div, a, b);
}

Expr operator%(const Expr& a, const Expr& b) {
  auto ca = a.as_const(), cb = b.as_const();
  if (is_const(cb, 0)) return Expr::make(K::Mod, a, b);  // kept so eval reports it
  if (ca && cb) return *fold(K::Mod, *ca, *cb);
  if (is_const(cb, 1) || is_const(ca, 0)) return 0;
  if (exact_quotient(a, b)) return 0;
  return Expr::make(K::Mod, a, b);
}

Expr min(const Expr& a, const Expr& b) {
  auto ca = a.as_const(), cb = b.as_const();
  if (ca && cb) return *fold(K::Min, *ca, *cb);
  if (a.same(b)) return a;
  return Expr::make(K::Min, a, b);
}

Expr max(const Expr& a, const Expr& b) {
  auto ca = a.as_const(), cb = b.as_const();
  if (ca && cb) return *fold(K::Max, *ca, *cb);
  if (a.same(b)) return a;
  return Expr::make(K::Max, a, b);
}

Expr lt(const Expr& a, const Expr& b) {
  auto ca = a.as_const(), cb = b.as_const();
  if (ca && cb) return *fold(K::Lt, *ca, *cb);
  if (a.same(b)) return 0;
  return Expr::make(K::Lt, a, b);
}

std::vector<int64_t> eval_all(const std::vector<Expr>& exprs, const DynMap& dyn) {
  std::vector<int64_t> out;
  out.reserve(exprs.size());
  for (const auto& e : exprs) out.push_back(e.eval(dyn));
  return out;
}

bool same_exprs(const std::vector<Expr>& a, const std::vector<Expr>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!a[i].same(b[i])) return false;
  return true;
}

std::string shape_string(const std::vector<Expr>& exprs) {
  std::string s = "[";
  for (size_t i = 0; i < exprs.size(); ++i) {
    if (i) s += ", ";
    s += exprs[i].to_string();
  }
  return s + "]";
}

Expr product(const std::vector<Expr>& exprs) {
  Expr p = 1;
  for (const auto& e : exprs) p = p * e;
  return p;
}

}  // namespace luminal
