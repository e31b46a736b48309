// The intermediate-arena placement (pure C++; runs without a GPU).
#include <gtest/gtest.h>

#include <random>

#include "cuda/runtime/arena.h"

namespace luminal::cuda {
namespace {

bool overlap_in_time(const ArenaRequest& a, const ArenaRequest& b) {
  return a.first <= b.last && b.first <= a.last;
}

void expect_valid(const std::vector<ArenaRequest>& reqs, const ArenaLayout& l, size_t align) {
  ASSERT_EQ(l.offsets.size(), reqs.size());
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_EQ(l.offsets[i] % align, 0u) << i;
    if (reqs[i].bytes > 0) {
      EXPECT_LE(l.offsets[i] + reqs[i].bytes, l.total) << i;
    }
    for (size_t j = i + 1; j < reqs.size(); ++j) {
      if (reqs[i].bytes == 0 || reqs[j].bytes == 0 || !overlap_in_time(reqs[i], reqs[j])) continue;
      const bool disjoint = l.offsets[i] + reqs[i].bytes <= l.offsets[j] ||
                            l.offsets[j] + reqs[j].bytes <= l.offsets[i];
      EXPECT_TRUE(disjoint) << "buffers " << i << " and " << j
                            << " are alive together but share memory";
    }
  }
}

TEST(Arena, ChainReusesMemory) {
  // a -> b -> c -> d: each buffer lives from its writer to its only reader.
  std::vector<ArenaRequest> reqs = {{1000, 0, 1}, {1000, 1, 2}, {1000, 2, 3}, {1000, 3, 4}};
  ArenaLayout l = plan_arena(reqs, 256);
  expect_valid(reqs, l, 256);
  EXPECT_EQ(l.total, 2048u);  // two 1024-byte slots alternate
  EXPECT_EQ(l.offsets[0], l.offsets[2]);
  EXPECT_EQ(l.offsets[1], l.offsets[3]);
}

TEST(Arena, SimultaneousBuffersAreDisjoint) {
  std::vector<ArenaRequest> reqs = {{300, 0, 5}, {500, 1, 2}, {100, 2, 5}};
  ArenaLayout l = plan_arena(reqs, 256);
  expect_valid(reqs, l, 256);
  EXPECT_EQ(l.total, 512u + 512u + 256u);
}

TEST(Arena, EmptyRequestsTakeNothing) {
  std::vector<ArenaRequest> reqs = {{0, 0, 9}, {0, 3, 4}};
  ArenaLayout l = plan_arena(reqs, 256);
  EXPECT_EQ(l.total, 0u);
}

TEST(Arena, RandomPlansNeverOverlap) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ArenaRequest> reqs(1 + rng() % 30);
    size_t sum = 0;
    for (ArenaRequest& r : reqs) {
      r.bytes = rng() % 5000;
      r.first = int(rng() % 20);
      r.last = r.first + int(rng() % 6);
      sum += (r.bytes + 255) / 256 * 256;
    }
    ArenaLayout l = plan_arena(reqs, 256);
    expect_valid(reqs, l, 256);
    EXPECT_LE(l.total, sum);
  }
}

}  // namespace
}  // namespace luminal::cuda
