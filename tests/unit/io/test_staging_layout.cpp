// Host-input staging layout (the one pinned region of a CUDA plan): plain C++, tested without a
// GPU.
#include <gtest/gtest.h>

#include <vector>

#include "cuda/runtime/staging_layout.h"

namespace luminal {
namespace {

using cuda::StagingLayout;

TEST(StagingLayout, SlotsAreAlignedAndDisjoint) {
  // The seed DLRM's inputs: dense_x 104 KiB, offsets, indices, and an empty one.
  const StagingLayout l({106496, 24576, 100, 0, 3}, 256);
  ASSERT_EQ(l.size(), 5u);
  EXPECT_EQ(l.offset(0), 0u);
  EXPECT_EQ(l.offset(1), 106496u);
  EXPECT_EQ(l.offset(2), 106496u + 24576u);
  EXPECT_EQ(l.offset(3), 106496u + 24576u + 256u);  // 100 bytes round up to 256
  EXPECT_EQ(l.offset(4), l.offset(3));              // an empty slot takes no room
  EXPECT_EQ(l.total(), l.offset(4) + 256u);
  for (size_t k = 0; k + 1 < l.size(); ++k) {
    EXPECT_EQ(l.offset(k) % 256, 0u) << k;
    EXPECT_LE(l.offset(k) + l.capacity(k), l.offset(k + 1)) << k;
  }
}

TEST(StagingLayout, GrowingASlotMovesOnlyLaterSlots) {
  StagingLayout l({512, 256, 1024});
  EXPECT_FALSE(l.reserve(0, 512));  // fits: nothing moves
  EXPECT_FALSE(l.reserve(1, 1));
  const size_t before0 = l.offset(0), before1 = l.offset(1);
  EXPECT_TRUE(l.reserve(1, 300));
  EXPECT_EQ(l.offset(0), before0);
  EXPECT_EQ(l.offset(1), before1);
  EXPECT_EQ(l.capacity(1), 384u);  // grows by half at least: max(300, 256 + 128)
  EXPECT_EQ(l.offset(2), 512u + 512u);
  EXPECT_EQ(l.total(), 1024u + 1024u);
  EXPECT_TRUE(l.reserve(1, 5000));  // a big jump takes exactly what is asked
  EXPECT_EQ(l.capacity(1), 5000u);
  EXPECT_EQ(l.offset(2), 512u + 5120u);
}

TEST(StagingLayout, EmptyLayoutNeedsNoRegion) {
  EXPECT_EQ(StagingLayout(std::vector<size_t>{}).total(), 0u);
  EXPECT_EQ(StagingLayout(std::vector<size_t>{0, 0}).total(), 0u);
}

}  // namespace
}  // namespace luminal
