// ShapeTracker views checked element by element against hand-written source offsets.
#include <gtest/gtest.h>

#include "luminal/shape.h"
#include "unit/core/core_test_util.h"

namespace luminal {
namespace {

constexpr int64_t P = -1;  // marks a padding element in expected offset lists

// Source offsets of every logical element in row-major order; padding as P.
std::vector<int64_t> offsets(const ShapeTracker& st, const DynMap& dyn = {}) {
  ConcreteView v = st.resolve(dyn);
  std::vector<int64_t> out;
  for (int64_t i = 0; i < v.numel(); ++i) out.push_back(v.source_offset_flat(i).value_or(P));
  return out;
}

std::vector<int64_t> ints(const std::vector<Expr>& es, const DynMap& dyn = {}) {
  return eval_all(es, dyn);
}

using V = std::vector<int64_t>;

TEST(Shape, Contiguous) {
  auto st = ShapeTracker::contiguous({2, 3, 4});
  EXPECT_EQ(st.rank(), 3u);
  EXPECT_EQ(ints(st.dims), (V{2, 3, 4}));
  EXPECT_EQ(ints(st.strides), (V{12, 4, 1}));
  EXPECT_EQ(ints(st.pad_lo), (V{0, 0, 0}));
  EXPECT_EQ(ints(st.pad_hi), (V{0, 0, 0}));
  EXPECT_EQ(st.offset.as_const(), 0);
  EXPECT_EQ(st.numel().as_const(), 24);
  EXPECT_TRUE(st.is_contiguous());
  EXPECT_FALSE(st.has_padding());
  V expect(24);
  for (int i = 0; i < 24; ++i) expect[i] = i;
  EXPECT_EQ(offsets(st), expect);
  auto scalar = ShapeTracker::contiguous({});
  EXPECT_EQ(scalar.numel().as_const(), 1);
  EXPECT_TRUE(scalar.is_contiguous());
  EXPECT_EQ(offsets(scalar), (V{0}));
}

TEST(Shape, SymbolicContiguous) {
  auto st = ShapeTracker::contiguous({2, Expr::sym("batch"), 4});
  EXPECT_EQ(st.strides[0].to_string(), "(batch * 4)");
  EXPECT_TRUE(st.is_contiguous());
  for (int64_t b : {1, 3, 7}) {
    DynMap m{{"batch", b}};
    EXPECT_EQ(ints(st.strides, m), (V{4 * b, 4, 1}));
    EXPECT_EQ(st.numel().eval(m), 8 * b);
    EXPECT_TRUE(st.resolve(m).is_contiguous());
  }
}

TEST(Shape, Permute) {
  auto st = ShapeTracker::contiguous({2, 3}).permute(std::vector<int>{1, 0});
  EXPECT_EQ(ints(st.dims), (V{3, 2}));
  EXPECT_EQ(ints(st.strides), (V{1, 3}));
  EXPECT_FALSE(st.is_contiguous());
  EXPECT_EQ(offsets(st), (V{0, 3, 1, 4, 2, 5}));
  EXPECT_FALSE(st.resolve({}).is_contiguous());
}

TEST(Shape, PermuteRejectsNonPermutations) {
  auto st = ShapeTracker::contiguous({2, 3, 4});
  for (std::vector<int> bad : {std::vector<int>{0, 1}, {0, 1, 1}, {0, 1, 3}, {-1, 0, 1}}) {
    std::string msg = error_of([&] { (void)st.permute(bad); });
    EXPECT_NE(msg.find("[permute]"), std::string::npos) << msg;
    EXPECT_NE(msg.find("not a permutation"), std::string::npos) << msg;
  }
}

TEST(Shape, Expand) {
  auto st = ShapeTracker::contiguous({2, 3}).expand(1, 4);
  EXPECT_EQ(ints(st.dims), (V{2, 4, 3}));
  EXPECT_EQ(ints(st.strides), (V{3, 0, 1}));
  EXPECT_EQ(offsets(st),
            (V{0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 3, 4, 5, 3, 4, 5, 3, 4, 5, 3, 4, 5}));
  auto back = ShapeTracker::contiguous({2}).expand(1, 3);  // axis == rank appends
  EXPECT_EQ(offsets(back), (V{0, 0, 0, 1, 1, 1}));
  EXPECT_FALSE(back.is_contiguous());
}

TEST(Shape, AxisOutOfRange) {
  auto st = ShapeTracker::contiguous({2, 3, 4});
  std::string msg = error_of([&] { (void)st.slice(5, 0, 1); });
  EXPECT_NE(msg.find("[shape] axis 5 out of range for rank 3"), std::string::npos) << msg;
  msg = error_of([&] { (void)st.expand(5, 2); });
  EXPECT_NE(msg.find("[shape] axis 5 out of range for rank 3"), std::string::npos) << msg;
  EXPECT_THROW((void)st.expand(-1, 2), std::out_of_range);  // negative axes are normalized above
  EXPECT_THROW((void)st.pad(3, 1, 1), std::out_of_range);
  EXPECT_THROW((void)st.split(-1, 2), std::out_of_range);
  EXPECT_THROW((void)st.merge(2), std::out_of_range);
  EXPECT_THROW((void)ShapeTracker::contiguous({}).merge(0), std::out_of_range);
}

TEST(Shape, Slice) {
  auto st = ShapeTracker::contiguous({4, 5}).slice(1, 1, 4);
  EXPECT_EQ(ints(st.dims), (V{4, 3}));
  EXPECT_EQ(st.offset.as_const(), 1);
  EXPECT_EQ(offsets(st), (V{1, 2, 3, 6, 7, 8, 11, 12, 13, 16, 17, 18}));
  EXPECT_FALSE(st.is_contiguous());
  auto rows = ShapeTracker::contiguous({4, 5}).slice(0, 2, 4);
  EXPECT_EQ(offsets(rows), (V{10, 11, 12, 13, 14, 15, 16, 17, 18, 19}));
  std::string msg = error_of([] { (void)ShapeTracker::contiguous({4}).slice(0, 2, 5); });
  EXPECT_NE(msg.find("[slice]"), std::string::npos) << msg;
  EXPECT_THROW((void)ShapeTracker::contiguous({4}).slice(0, 3, 2), std::out_of_range);
}

TEST(Shape, Pad) {
  auto st = ShapeTracker::contiguous({3}).pad(0, 2, 1);
  EXPECT_EQ(ints(st.dims), (V{6}));
  EXPECT_EQ(ints(st.pad_lo), (V{2}));
  EXPECT_EQ(ints(st.pad_hi), (V{1}));
  EXPECT_TRUE(st.has_padding());
  EXPECT_FALSE(st.is_contiguous());
  EXPECT_EQ(offsets(st), (V{P, P, 0, 1, 2, P}));
  EXPECT_THROW((void)st.pad(0, -1, 0), std::invalid_argument);
}

TEST(Shape, SliceOfPaddedDim) {
  // [5] padded (2, 3) -> 10 elements: P P 0 1 2 3 4 P P P; keep [1, 9).
  auto st = ShapeTracker::contiguous({5}).pad(0, 2, 3).slice(0, 1, 9);
  EXPECT_EQ(ints(st.dims), (V{8}));
  EXPECT_EQ(ints(st.pad_lo), (V{1}));
  EXPECT_EQ(ints(st.pad_hi), (V{2}));
  EXPECT_EQ(offsets(st), (V{P, 0, 1, 2, 3, 4, P, P}));
  // Start past the low padding moves the offset: keep [3, 6) -> 1 2 3.
  auto mid = ShapeTracker::contiguous({5}).pad(0, 2, 3).slice(0, 3, 6);
  EXPECT_EQ(ints(mid.pad_lo), (V{0}));
  EXPECT_EQ(ints(mid.pad_hi), (V{0}));
  EXPECT_EQ(offsets(mid), (V{1, 2, 3}));
  // Entirely inside the padding.
  auto hi = ShapeTracker::contiguous({5}).pad(0, 2, 3).slice(0, 8, 10);
  EXPECT_EQ(offsets(hi), (V{P, P}));
  auto lo = ShapeTracker::contiguous({5}).pad(0, 2, 3).slice(0, 0, 2);
  EXPECT_EQ(offsets(lo), (V{P, P}));
}

TEST(Shape, PermuteSlicePad) {
  // [2,3,4] strides [12,4,1] -> permute {2,0,1}: dims [4,2,3] strides [1,12,4]
  // -> slice axis 0 [1,3): offset 1 -> pad axis 2 (1, 0): (a,b,c) reads 1 + a + 12b + 4(c-1).
  auto st = ShapeTracker::contiguous({2, 3, 4})
                .permute(std::vector<int>{2, 0, 1})
                .slice(0, 1, 3)
                .pad(2, 1, 0);
  EXPECT_EQ(ints(st.dims), (V{2, 2, 4}));
  EXPECT_EQ(ints(st.strides), (V{1, 12, 4}));
  EXPECT_EQ(st.offset.as_const(), 1);
  EXPECT_EQ(offsets(st), (V{P, 1, 5, 9, P, 13, 17, 21, P, 2, 6, 10, P, 14, 18, 22}));
  ConcreteView v = st.resolve({});
  EXPECT_EQ(v.source_offset(std::vector<int64_t>{1, 1, 3}), 22);
  EXPECT_EQ(v.source_offset(std::vector<int64_t>{1, 0, 0}), std::nullopt);
  // Slicing the padded axis again: [0, 2) keeps the pad, [2, 4) moves the offset by 4.
  auto first = st.slice(2, 0, 2);
  EXPECT_EQ(offsets(first), (V{P, 1, P, 13, P, 2, P, 14}));
  auto last = st.slice(2, 2, 4);
  EXPECT_EQ(last.offset.as_const(), 5);
  EXPECT_EQ(offsets(last), (V{5, 9, 17, 21, 6, 10, 18, 22}));
}

TEST(Shape, Split) {
  auto st = ShapeTracker::contiguous({6, 4}).split(0, 2);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(ints(st->dims), (V{3, 2, 4}));
  EXPECT_EQ(ints(st->strides), (V{8, 4, 1}));
  EXPECT_TRUE(st->is_contiguous());
  auto t = ShapeTracker::contiguous({2, 6}).permute(std::vector<int>{1, 0}).split(0, 3);
  ASSERT_TRUE(t.has_value());  // dims [2,3,2] strides [3,1,6]
  EXPECT_EQ(offsets(*t), (V{0, 6, 1, 7, 2, 8, 3, 9, 4, 10, 5, 11}));
  EXPECT_FALSE(ShapeTracker::contiguous({6}).pad(0, 1, 1).split(0, 2).has_value());
  EXPECT_TRUE(ShapeTracker::contiguous({6, 2}).pad(1, 1, 1).split(0, 2).has_value());
  EXPECT_THROW((void)ShapeTracker::contiguous({6}).split(0, 4), std::invalid_argument);
  EXPECT_THROW((void)ShapeTracker::contiguous({6}).split(0, 0), std::invalid_argument);
}

TEST(Shape, SplitSymbolic) {
  Expr n = Expr::sym("n");
  auto st = ShapeTracker::contiguous({n * 4}).split(0, 4);
  ASSERT_TRUE(st.has_value());
  EXPECT_TRUE(st->dims[0].same(n));
  EXPECT_EQ(ints(st->strides), (V{4, 1}));
  EXPECT_TRUE(st->is_contiguous());
  EXPECT_FALSE(ShapeTracker::contiguous({n}).pad(0, Expr::sym("p"), 0).split(0, 2).has_value());
}

TEST(Shape, Merge) {
  auto base = ShapeTracker::contiguous({2, 3, 4});
  auto m1 = base.merge(1);
  ASSERT_TRUE(m1.has_value());
  EXPECT_EQ(ints(m1->dims), (V{2, 12}));
  EXPECT_EQ(ints(m1->strides), (V{12, 1}));
  EXPECT_TRUE(m1->is_contiguous());
  auto m0 = base.merge(0);
  ASSERT_TRUE(m0.has_value());
  EXPECT_EQ(ints(m0->dims), (V{6, 4}));
  EXPECT_EQ(ints(m0->strides), (V{4, 1}));
  // Transposed dims cannot merge without a copy.
  auto tr = ShapeTracker::contiguous({3, 4}).permute(std::vector<int>{1, 0});
  EXPECT_FALSE(tr.merge(0).has_value());
  // A sliced inner dim breaks the stride chain; a sliced outer dim keeps it.
  EXPECT_FALSE(ShapeTracker::contiguous({3, 4}).slice(1, 0, 2).merge(0).has_value());
  auto outer = ShapeTracker::contiguous({3, 4}).slice(0, 1, 3).merge(0);
  ASSERT_TRUE(outer.has_value());
  EXPECT_EQ(offsets(*outer), (V{4, 5, 6, 7, 8, 9, 10, 11}));
  EXPECT_FALSE(ShapeTracker::contiguous({3, 4}).pad(1, 1, 0).merge(0).has_value());
}

TEST(Shape, MergeSizeOneAndBroadcast) {
  auto one = ShapeTracker::contiguous({3, 4}).expand(1, 1);  // strides [4, 0, 1]
  auto m = one.merge(1);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ(ints(m->strides), (V{4, 1}));
  auto m0 = one.merge(0);
  ASSERT_TRUE(m0.has_value());
  EXPECT_EQ(ints(m0->strides), (V{4, 1}));
  EXPECT_TRUE(one.is_contiguous());  // a size-1 dim may have any stride
  auto bc = ShapeTracker::contiguous({3}).expand(0, 5).expand(0, 2);  // strides [0, 0, 1]
  auto mb = bc.merge(0);
  ASSERT_TRUE(mb.has_value());
  EXPECT_EQ(ints(mb->dims), (V{10, 3}));
  EXPECT_EQ(ints(mb->strides), (V{0, 1}));
  EXPECT_FALSE(bc.merge(1).has_value());  // stride 0 next to stride 1
}

TEST(Shape, MergeSymbolic) {
  Expr batch = Expr::sym("batch");
  auto m = ShapeTracker::contiguous({2, batch, 4}).merge(0);
  ASSERT_TRUE(m.has_value());
  EXPECT_TRUE(m->dims[0].same(batch * 2));
  EXPECT_TRUE(m->is_contiguous());
  auto m2 = m->merge(0);
  ASSERT_TRUE(m2.has_value());
  for (int64_t b : {1, 2, 5}) {
    DynMap d{{"batch", b}};
    EXPECT_EQ(ints(m->dims, d), (V{2 * b, 4}));
    EXPECT_EQ(ints(m->strides, d), (V{4, 1}));
    EXPECT_EQ(ints(m2->dims, d), (V{8 * b}));
  }
}

TEST(Shape, SymbolicSliceAndPad) {
  Expr batch = Expr::sym("batch"), p = Expr::sym("p");
  auto st = ShapeTracker::contiguous({batch, 3}).slice(0, 1, batch);
  EXPECT_EQ(st.offset.as_const(), 3);
  for (int64_t b : {2, 5}) {
    DynMap d{{"batch", b}};
    EXPECT_EQ(ints(st.dims, d), (V{b - 1, 3}));
  }
  EXPECT_EQ(offsets(st, {{"batch", 3}}), (V{3, 4, 5, 6, 7, 8}));
  auto padded = ShapeTracker::contiguous({batch}).pad(0, p, 1);
  EXPECT_EQ(offsets(padded, {{"batch", 2}, {"p", 0}}), (V{0, 1, P}));
  EXPECT_EQ(offsets(padded, {{"batch", 2}, {"p", 2}}), (V{P, P, 0, 1, P}));
  // Symbolic start: offset and padding are min/max expressions evaluated per DynMap.
  Expr s = Expr::sym("s");
  auto sl = padded.slice(0, s, batch + p + 1);
  EXPECT_EQ(offsets(sl, {{"batch", 3}, {"p", 2}, {"s", 1}}), (V{P, 0, 1, 2, P}));
  EXPECT_EQ(offsets(sl, {{"batch", 3}, {"p", 2}, {"s", 3}}), (V{1, 2, P}));
  EXPECT_EQ(offsets(sl, {{"batch", 3}, {"p", 0}, {"s", 0}}), (V{0, 1, 2, P}));
}

TEST(ConcreteView, Basics) {
  ConcreteView v{{2, 3}, {3, 1}, {0, 0}, {0, 0}, 0};
  EXPECT_EQ(v.numel(), 6);
  EXPECT_TRUE(v.is_contiguous());
  EXPECT_EQ(v.source_offset(std::vector<int64_t>{1, 2}), 5);
  EXPECT_EQ(v.source_offset_flat(4), 4);
  EXPECT_THROW((void)v.source_offset(std::vector<int64_t>{1}), std::invalid_argument);
  ConcreteView off{{2, 3}, {3, 1}, {0, 0}, {0, 0}, 1};
  EXPECT_FALSE(off.is_contiguous());
  ConcreteView pad{{2, 3}, {3, 1}, {0, 1}, {0, 0}, 0};
  EXPECT_FALSE(pad.is_contiguous());
  ConcreteView one{{1, 3}, {99, 1}, {0, 0}, {0, 0}, 0};
  EXPECT_TRUE(one.is_contiguous());
  ConcreteView scalar{{}, {}, {}, {}, 7};
  EXPECT_EQ(scalar.numel(), 1);
  EXPECT_EQ(scalar.source_offset_flat(0), 7);
  ConcreteView empty{{0, 3}, {3, 1}, {0, 0}, {0, 0}, 0};
  EXPECT_EQ(empty.numel(), 0);
}

}  // namespace
}  // namespace luminal
