// Expr: folding, simplification, evaluation, printing and code generation.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "luminal/expr.h"
#include "unit/core/core_test_util.h"

namespace luminal {
namespace {

const Expr a = Expr::sym("a");
const Expr b = Expr::sym("b");
const Expr batch = Expr::sym("batch");

TEST(Expr, ConstantsAndSymbols) {
  EXPECT_EQ(Expr().as_const(), 0);
  EXPECT_EQ(Expr(7).as_const(), 7);
  EXPECT_EQ(Expr(int64_t{1} << 40).as_const(), int64_t{1} << 40);
  EXPECT_EQ(Expr(7).kind(), Expr::Kind::Const);
  EXPECT_EQ(batch.kind(), Expr::Kind::Sym);
  EXPECT_EQ(batch.as_sym(), "batch");
  EXPECT_EQ(batch.as_const(), std::nullopt);
  EXPECT_EQ(Expr(3).as_sym(), std::nullopt);
  EXPECT_TRUE(batch.children().empty());
  EXPECT_TRUE(Expr(3).children().empty());
  EXPECT_THROW(Expr::sym(""), std::invalid_argument);
}

TEST(Expr, FoldsConstants) {
  EXPECT_EQ((Expr(3) + 4).as_const(), 7);
  EXPECT_EQ((Expr(3) - 5).as_const(), -2);
  EXPECT_EQ((Expr(6) * 7).as_const(), 42);
  EXPECT_EQ((Expr(7) / 2).as_const(), 3);
  EXPECT_EQ((Expr(7) % 3).as_const(), 1);
  EXPECT_EQ((Expr(-7) / 2).as_const(), -3);  // C truncation
  EXPECT_EQ((Expr(-7) % 3).as_const(), -1);
  EXPECT_EQ(min(Expr(3), 5).as_const(), 3);
  EXPECT_EQ(max(Expr(3), 5).as_const(), 5);
  EXPECT_EQ(lt(Expr(3), 5).as_const(), 1);
  EXPECT_EQ(lt(Expr(5), 3).as_const(), 0);
  EXPECT_EQ(lt(Expr(5), 5).as_const(), 0);
  EXPECT_EQ(((Expr(2) + 3) * 4 - 1).as_const(), 19);
}

TEST(Expr, ConstantOverflowThrows) {
  Expr big = Expr(int64_t{1} << 62);
  EXPECT_THROW(big * 4, std::overflow_error);
  EXPECT_THROW(big + big, std::overflow_error);
}

TEST(Expr, Identities) {
  EXPECT_TRUE((a + 0).same(a));
  EXPECT_TRUE((Expr(0) + a).same(a));
  EXPECT_TRUE((a - 0).same(a));
  EXPECT_TRUE((a * 1).same(a));
  EXPECT_TRUE((Expr(1) * a).same(a));
  EXPECT_EQ((a * 0).as_const(), 0);
  EXPECT_EQ((Expr(0) * a).as_const(), 0);
  EXPECT_TRUE((a / 1).same(a));
  EXPECT_EQ((a % 1).as_const(), 0);
  EXPECT_EQ((Expr(0) / a).as_const(), 0);
  EXPECT_EQ((Expr(0) % a).as_const(), 0);
  EXPECT_EQ((a - a).as_const(), 0);
  EXPECT_TRUE(min(a, a).same(a));
  EXPECT_TRUE(max(a, a).same(a));
  EXPECT_EQ(lt(a, a).as_const(), 0);
}

TEST(Expr, CancellationRules) {
  EXPECT_TRUE(((a * 4) / 4).same(a));
  EXPECT_TRUE(((a * 8) / 4).same(a * 2));
  EXPECT_EQ(((a * 8) % 4).as_const(), 0);
  EXPECT_TRUE(((a * b) / b).same(a));
  EXPECT_TRUE(((a + 3) - 3).same(a));
  EXPECT_TRUE(((a + b) - b).same(a));
  EXPECT_TRUE(((a + b) - a).same(b));
  EXPECT_TRUE(((a + 5) + 2).same(a + 7));
  EXPECT_TRUE(((a * 3) * 2).same(a * 6));
  EXPECT_TRUE(((a / 2) / 3).same(a / 6));
  // Not simplifiable: (a * 3) / 2 must keep the truncating division.
  EXPECT_EQ(((a * 3) / 2).kind(), Expr::Kind::Div);
}

TEST(Expr, SameIsStructuralAndCanonical) {
  EXPECT_TRUE(Expr::sym("a").same(a));
  EXPECT_FALSE(a.same(b));
  EXPECT_FALSE((a * 2).same(a * 3));
  EXPECT_FALSE((a + b).same(a * b));
  EXPECT_FALSE(Expr(2).same(a));
  // Sums and products are ordered canonically, so commuted forms compare equal.
  EXPECT_TRUE((a + b).same(b + a));
  EXPECT_TRUE((a * b * 4).same(Expr(4) * b * a));
  EXPECT_TRUE((Expr(4) * batch).same(batch * 4));
}

TEST(Expr, Eval) {
  Expr e = batch * 4 + 1;
  EXPECT_EQ(e.eval({{"batch", 2}}), 9);
  EXPECT_EQ(e.eval({{"batch", 5}}), 21);
  EXPECT_EQ(e.eval({{"batch", 0}}), 1);
  DynMap m{{"a", 7}, {"b", 3}};
  EXPECT_EQ((a / b).eval(m), 2);
  EXPECT_EQ((a % b).eval(m), 1);
  EXPECT_EQ((a - b * 4).eval(m), -5);
  EXPECT_EQ(min(a, b).eval(m), 3);
  EXPECT_EQ(max(a, b).eval(m), 7);
  EXPECT_EQ(lt(a, b).eval(m), 0);
  EXPECT_EQ(lt(b, a).eval(m), 1);
  EXPECT_EQ(((a - 14) / b).eval(m), -2);  // C truncation toward zero
  EXPECT_EQ(((a - 14) % b).eval(m), -1);
  EXPECT_EQ(Expr(42).eval({}), 42);
}

TEST(Expr, EvalErrors) {
  std::string msg = error_of([] { (void)(batch * 4).eval({}); });
  EXPECT_NE(msg.find("[expr] unbound symbol 'batch' in (batch * 4)"), std::string::npos) << msg;
  msg = error_of([] { (void)(a / b).eval({{"a", 4}, {"b", 0}}); });
  EXPECT_NE(msg.find("[expr] division by zero in (a / b)"), std::string::npos) << msg;
  msg = error_of([] { (void)(a % (b - 2)).eval({{"a", 4}, {"b", 2}}); });
  EXPECT_NE(msg.find("division by zero"), std::string::npos) << msg;
  // A constant zero divisor is kept unfolded so that eval reports it.
  msg = error_of([] { (void)(Expr(5) / 0).eval({}); });
  EXPECT_NE(msg.find("division by zero"), std::string::npos) << msg;
}

TEST(Expr, Symbols) {
  EXPECT_EQ((b + a * Expr::sym("c") + a).symbols(), (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_TRUE(Expr(3).symbols().empty());
}

TEST(Expr, ToString) {
  EXPECT_EQ(Expr(12).to_string(), "12");
  EXPECT_EQ(Expr(-3).to_string(), "-3");
  EXPECT_EQ(batch.to_string(), "batch");
  EXPECT_EQ((batch * 4).to_string(), "(batch * 4)");
  EXPECT_EQ((batch * 4 + 1).to_string(), "((batch * 4) + 1)");
  EXPECT_EQ((batch - 3).to_string(), "(batch - 3)");
  EXPECT_EQ((a / b).to_string(), "(a / b)");
  EXPECT_EQ((a % 5).to_string(), "(a % 5)");
  EXPECT_EQ(min(a, b).to_string(), "min(a, b)");
  EXPECT_EQ(max(a, 2).to_string(), "max(a, 2)");
  EXPECT_EQ(lt(a, b).to_string(), "(a < b)");
}

TEST(Expr, ToCode) {
  EXPECT_EQ(Expr(7).to_code(), "7");
  EXPECT_EQ(Expr(2147483647).to_code(), "2147483647");
  EXPECT_EQ(Expr(int64_t{2147483648}).to_code(), "2147483648LL");
  EXPECT_EQ(Expr(-5).to_code(), "(-5)");
  EXPECT_EQ((batch * 4 + 1).to_code("dyn_"), "((dyn_batch * 4) + 1)");
  EXPECT_EQ((batch * int64_t{3000000000}).to_code(), "(batch * 3000000000LL)");
  EXPECT_EQ((a / b % 3).to_code("p."), "((p.a / p.b) % 3)");
  EXPECT_EQ(min(a, b).to_code("p."), "((p.a) < (p.b) ? (p.a) : (p.b))");
  EXPECT_EQ(max(a, 2).to_code(), "((a) > (2) ? (a) : (2))");
  EXPECT_EQ(lt(a, b + 1).to_code(), "((a) < ((b + 1)) ? 1LL : 0LL)");
}

TEST(Expr, ShapeHelpers) {
  std::vector<Expr> shape{2, batch, 4};
  EXPECT_EQ(shape_string(shape), "[2, batch, 4]");
  EXPECT_EQ(shape_string({}), "[]");
  EXPECT_EQ(eval_all(shape, {{"batch", 3}}), (std::vector<int64_t>{2, 3, 4}));
  Expr p = product(shape);
  EXPECT_TRUE(p.same(batch * 8));
  EXPECT_EQ(p.eval({{"batch", 3}}), 24);
  EXPECT_EQ(product({}).as_const(), 1);
  EXPECT_EQ(product({2, 3, 4}).as_const(), 24);
}

// A random expression paired with a direct evaluator that applies C semantics without simplifying.
struct Sample {
  Expr e;
  std::function<int64_t(const DynMap&)> f;
};

Sample random_expr(std::mt19937& rng, int depth) {
  const char* names[] = {"x", "y", "z"};
  int pick = std::uniform_int_distribution<int>(0, depth <= 0 ? 1 : 8)(rng);
  if (pick == 0) {
    int64_t c = std::uniform_int_distribution<int>(0, 4)(rng);
    return {Expr(c), [c](const DynMap&) { return c; }};
  }
  if (pick == 1) {
    std::string n = names[std::uniform_int_distribution<int>(0, 2)(rng)];
    return {Expr::sym(n), [n](const DynMap& m) { return m.find(n)->second; }};
  }
  Sample l = random_expr(rng, depth - 1), r = random_expr(rng, depth - 1);
  switch (pick) {
    case 2:
      return {l.e + r.e, [l, r](const DynMap& m) { return l.f(m) + r.f(m); }};
    case 3:
      return {l.e - r.e, [l, r](const DynMap& m) { return l.f(m) - r.f(m); }};
    case 4:
      return {l.e * r.e, [l, r](const DynMap& m) { return l.f(m) * r.f(m); }};
    case 5: {
      // Divisors never evaluate to zero: a symbol + 1 (symbols are >= 0) or a constant 1..4.
      std::string n = names[std::uniform_int_distribution<int>(0, 2)(rng)];
      bool sym = std::uniform_int_distribution<int>(0, 1)(rng);
      int64_t c = std::uniform_int_distribution<int>(1, 4)(rng);
      Expr d = sym ? Expr::sym(n) + 1 : Expr(c);
      auto df = [=](const DynMap& m) { return sym ? m.find(n)->second + 1 : c; };
      if (std::uniform_int_distribution<int>(0, 1)(rng))
        return {l.e / d, [l, df](const DynMap& m) { return l.f(m) / df(m); }};
      return {l.e % d, [l, df](const DynMap& m) { return l.f(m) % df(m); }};
    }
    case 6:
      return {min(l.e, r.e), [l, r](const DynMap& m) { return std::min(l.f(m), r.f(m)); }};
    case 7:
      return {max(l.e, r.e), [l, r](const DynMap& m) { return std::max(l.f(m), r.f(m)); }};
    default:
      return {lt(l.e, r.e), [l, r](const DynMap& m) { return int64_t{l.f(m) < r.f(m)}; }};
  }
}

TEST(Expr, SimplificationPreservesValue) {
  std::mt19937 rng(1234);
  for (int t = 0; t < 2000; ++t) {
    Sample s = random_expr(rng, 4);
    for (int k = 0; k < 4; ++k) {
      DynMap m{{"x", rng() % 9}, {"y", rng() % 9}, {"z", rng() % 9}};
      ASSERT_EQ(s.e.eval(m), s.f(m))
          << s.e.to_string() << " at x=" << m["x"] << " y=" << m["y"] << " z=" << m["z"];
    }
  }
}

}  // namespace
}  // namespace luminal
