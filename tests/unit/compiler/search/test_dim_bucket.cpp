// Dim buckets: representatives, power-of-two coverage, lookup, errors.
#include "compiler/search/dim_bucket.h"

#include <gtest/gtest.h>

#include <limits>

namespace luminal::compiler::search {
namespace {

TEST(DimBucket, TheRepresentativeIsTheMaxAndOnlyInsideTheBucket) {
  const DimBucket b{5, 8};
  EXPECT_EQ(b.representative(5), 8);
  EXPECT_EQ(b.representative(8), 8);
  EXPECT_TRUE(b.contains(5));
  EXPECT_TRUE(b.contains(8));
  EXPECT_FALSE(b.contains(4));
  EXPECT_FALSE(b.contains(9));
  EXPECT_THROW(b.representative(4), std::out_of_range);
  try {
    b.representative(9);
    FAIL();
  } catch (const std::out_of_range& e) {
    EXPECT_STREQ(e.what(), "[bucket] 9 outside [5, 8]");
  }
}

TEST(DimBucket, Pow2BucketsEndAtPowersOfTwoAndAtHi) {
  const auto b = pow2_buckets(1, 20);
  const std::vector<std::pair<int64_t, int64_t>> want = {{1, 1}, {2, 2},  {3, 4},
                                                         {5, 8}, {9, 16}, {17, 20}};
  ASSERT_EQ(b.size(), want.size());
  for (size_t i = 0; i < b.size(); ++i) {
    EXPECT_EQ(b[i].min, want[i].first) << i;
    EXPECT_EQ(b[i].max, want[i].second) << i;
  }
  const auto mid = pow2_buckets(6, 6);
  ASSERT_EQ(mid.size(), 1u);
  EXPECT_EQ(mid[0].min, 6);
  EXPECT_EQ(mid[0].max, 6);
  const auto from6 = pow2_buckets(6, 9);
  ASSERT_EQ(from6.size(), 2u);
  EXPECT_EQ(from6[0].max, 8);
  EXPECT_EQ(from6[1].min, 9);
}

TEST(DimBucket, Pow2BucketsCoverEveryValueExactlyOnce) {
  const auto b = pow2_buckets(1, 16384);
  EXPECT_EQ(b.size(), 15u);  // [1,1], [2,2], then one per power up to 2^14
  EXPECT_EQ(b.back().max, 16384);
  for (int64_t v = 1; v <= 16384; ++v) {
    int holders = 0;
    for (const DimBucket& x : b) holders += x.contains(v);
    ASSERT_EQ(holders, 1) << v;
    const int i = find_bucket(b, v);
    ASSERT_GE(i, 0) << v;
    ASSERT_TRUE(b[size_t(i)].contains(v)) << v;
    ASSERT_LE(b[size_t(i)].representative(v), 2 * v) << v;  // at most twice the work
  }
}

TEST(DimBucket, FindBucketAtTheEdgesAndOutside) {
  const auto b = pow2_buckets(3, 100);  // [3,4], [5,8], ..., [65,100]
  EXPECT_EQ(find_bucket(b, 3), 0);
  EXPECT_EQ(find_bucket(b, 4), 0);
  EXPECT_EQ(find_bucket(b, 5), 1);
  EXPECT_EQ(find_bucket(b, 100), int(b.size()) - 1);
  EXPECT_EQ(find_bucket(b, 2), -1);
  EXPECT_EQ(find_bucket(b, 101), -1);
  EXPECT_EQ(find_bucket(b, 0), -1);
  EXPECT_EQ(find_bucket({}, 1), -1);
  const std::vector<DimBucket> gap = {{1, 2}, {5, 8}};  // a hole between buckets
  EXPECT_EQ(find_bucket(gap, 3), -1);
  EXPECT_EQ(find_bucket(gap, 5), 1);
}

TEST(DimBucket, BadRangesThrowAndHugeOnesDoNotOverflow) {
  EXPECT_THROW(pow2_buckets(0, 4), std::invalid_argument);
  EXPECT_THROW(pow2_buckets(5, 4), std::invalid_argument);
  const int64_t top = std::numeric_limits<int64_t>::max();
  const auto b = pow2_buckets(1, top);
  EXPECT_EQ(b.size(), 64u);  // [1,1], [2,2], ..., [2^62+1, 2^63-1]
  EXPECT_EQ(b.back().max, top);
  EXPECT_EQ(b.back().min, (int64_t{1} << 62) + 1);
}

TEST(DimBucket, BucketOptionsValidateTheirRanges) {
  BucketOptions off;
  EXPECT_FALSE(off.enabled());
  EXPECT_NO_THROW(off.validate());  // off: nothing to check
  BucketOptions ok{"batch", pow2_buckets(1, 16384)};
  EXPECT_TRUE(ok.enabled());
  EXPECT_NO_THROW(ok.validate());
  auto message = [](const BucketOptions& o) {
    try {
      o.validate();
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_EQ(message({"batch", {}}), "[bucket] dim 'batch' has no ranges");
  EXPECT_EQ(message({"batch", {{4, 2}}}), "[bucket] range [4, 2] is empty");
  EXPECT_EQ(message({"batch", {{1, 4}, {4, 8}}}),
            "[bucket] ranges [1, 4] and [4, 8] overlap or are out of order");
  EXPECT_EQ(message({"batch", {{5, 8}, {1, 4}}}),
            "[bucket] ranges [5, 8] and [1, 4] overlap or are out of order");
}

}  // namespace
}  // namespace luminal::compiler::search
