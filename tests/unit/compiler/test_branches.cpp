// schedule_branches: hazards become waits, independent chains get their own streams, and a
// schedule replayed in stream order never runs two conflicting steps unordered.
#include "compiler/branches.h"

#include <gtest/gtest.h>

#include <random>

namespace luminal::compiler {
namespace {

StepAccess step(std::vector<ByteRange> reads, std::vector<ByteRange> writes) {
  return StepAccess{std::move(reads), std::move(writes), true};
}
constexpr ByteRange A{0, 100}, B{100, 200}, C{200, 300}, D{300, 400}, E{400, 500};

TEST(Branches, IndependentChainsGetTheirOwnStreamsAndJoinWithAWait) {
  // DLRM's shape: bottom chain A->B, sparse C->D, top reads B and D.
  const std::vector<StepAccess> steps = {step({A}, {B}), step({C}, {D}), step({B, D}, {E})};
  const auto slots = schedule_branches(steps, 4);
  EXPECT_EQ(slots[0].stream, 0);
  EXPECT_EQ(slots[1].stream, 1);
  EXPECT_TRUE(slots[1].waits.empty());
  // It continues one chain (the most recent tail) and waits for the other.
  EXPECT_EQ(slots[2].stream, 1);
  EXPECT_EQ(slots[2].waits, std::vector<int>{0});
  EXPECT_EQ(streams_used(slots, steps), 2);
  EXPECT_EQ(lead_stream(slots, steps), 0) << "two steps before the join against one";
}

TEST(Branches, TheLeadStreamHasTheLongestChainBeforeItsJoin) {
  // DLRM-v2's split plan: the bottom MLP (three steps) beside the bags (one), then the concat and
  // everything after it on the bags' stream: the bottom MLP leads although the other stream ends
  // up with more steps.
  const std::vector<StepAccess> steps = {step({A}, {B}), step({B}, {C}), step({C}, {D}), step({E}, {{500, 600}}),
                                         step({D, {500, 600}}, {{600, 700}}), step({{600, 700}}, {{700, 800}}),
                                         step({{700, 800}}, {{800, 900}}), step({{800, 900}}, {{900, 1000}})};
  const auto slots = schedule_branches(steps, 4);
  ASSERT_EQ(streams_used(slots, steps), 2);
  EXPECT_EQ(slots[3].stream, 1);
  EXPECT_EQ(slots[7].stream, slots[4].stream);
  EXPECT_EQ(lead_stream(slots, steps), slots[0].stream);
  EXPECT_EQ(lead_stream({}, {}), 0);
}

TEST(Branches, TwoReadersDoNotConflictButAWriteAfterReadDoes) {
  const std::vector<StepAccess> steps = {step({A}, {B}), step({A}, {C}), step({}, {A})};
  const auto slots = schedule_branches(steps, 4);
  EXPECT_NE(slots[0].stream, slots[1].stream);  // both only read A
  // Step 2 overwrites A (arena reuse): it must follow both readers.
  std::vector<int> order = slots[2].waits;
  if (slots[2].stream == slots[0].stream) order.push_back(0);
  if (slots[2].stream == slots[1].stream) order.push_back(1);
  std::sort(order.begin(), order.end());
  EXPECT_EQ(order, (std::vector<int>{0, 1}));
}

TEST(Branches, OneStreamIsPlanOrderWithNoWaits) {
  const std::vector<StepAccess> steps = {step({A}, {B}), step({C}, {D}), step({B, D}, {E})};
  for (const BranchSlot& s : schedule_branches(steps, 1)) {
    EXPECT_EQ(s.stream, 0);
    EXPECT_TRUE(s.waits.empty());
  }
}

TEST(Branches, StepsThatLaunchNothingAreSkipped) {
  std::vector<StepAccess> steps = {step({A}, {B}), step({B}, {C}), step({C}, {D})};
  steps[1].launches = false;  // empty at these dims: writes nothing, so D does not wait on B
  const auto slots = schedule_branches(steps, 4);
  EXPECT_NE(slots[2].stream, slots[0].stream);
  EXPECT_TRUE(slots[2].waits.empty());
}

TEST(Branches, MoreChainsThanStreamsShareTheOldestStream) {
  const std::vector<StepAccess> steps = {step({}, {A}), step({}, {B}), step({}, {C})};
  const auto slots = schedule_branches(steps, 2);
  EXPECT_EQ(slots[0].stream, 0);
  EXPECT_EQ(slots[1].stream, 1);
  EXPECT_EQ(slots[2].stream, 0);  // behind step 0 (idle longest): a false edge, never a race
}

// Every conflicting pair must be ordered: same stream (plan order) or a chain of waits.
TEST(Branches, RandomPlansOrderEveryConflictingPair) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    const int n = 2 + int(rng() % 24);
    std::vector<StepAccess> steps;
    auto range = [&] {
      const uint64_t b = rng() % 8 * 10;
      return ByteRange{b, b + 5 + rng() % 20};
    };
    for (int i = 0; i < n; ++i) {
      StepAccess s;
      for (int r = int(rng() % 3); r > 0; --r) s.reads.push_back(range());
      for (int w = int(rng() % 2) + 1; w > 0; --w) s.writes.push_back(range());
      s.launches = rng() % 8 != 0;
      steps.push_back(s);
    }
    const auto slots = schedule_branches(steps, 1 + int(rng() % 4));
    // before[j][i]: i is ordered before j through streams and waits.
    std::vector<std::vector<bool>> before(size_t(n), std::vector<bool>(size_t(n), false));
    for (int j = 0; j < n; ++j) {
      if (!steps[size_t(j)].launches) continue;
      for (int i = 0; i < j; ++i) {
        if (!steps[size_t(i)].launches) continue;
        bool direct = slots[size_t(i)].stream == slots[size_t(j)].stream;
        for (int w : slots[size_t(j)].waits) direct = direct || w == i;
        if (!direct) continue;
        before[size_t(j)][size_t(i)] = true;
        for (int k = 0; k < i; ++k) before[size_t(j)][size_t(k)] = before[size_t(j)][size_t(k)] || before[size_t(i)][size_t(k)];
      }
    }
    auto overlap = [](const std::vector<ByteRange>& a, const std::vector<ByteRange>& b) {
      for (const ByteRange& x : a)
        for (const ByteRange& y : b)
          if (x.begin < y.end && y.begin < x.end) return true;
      return false;
    };
    for (int j = 0; j < n; ++j)
      for (int i = 0; i < j; ++i) {
        const StepAccess &si = steps[size_t(i)], &sj = steps[size_t(j)];
        if (!si.launches || !sj.launches) continue;
        const bool conflict = overlap(si.writes, sj.reads) || overlap(si.writes, sj.writes) ||
                              overlap(si.reads, sj.writes);
        if (conflict) EXPECT_TRUE(before[size_t(j)][size_t(i)]) << "trial " << trial << ": " << i << " -> " << j;
      }
  }
}

}  // namespace
}  // namespace luminal::compiler

namespace luminal::compiler {
namespace {

TEST(Branches, EarliestStartIsOnePastTheLatestProducer) {
  // 0: writes 0; 1: reads 0 writes 1; 2: reads nothing (a graph input) writes 2; 3: reads 1, 2.
  const std::vector<StepBuffers> steps = {{{}, {0}}, {{0}, {1}}, {{}, {2}}, {{1, 2}, {3}}};
  EXPECT_EQ(earliest_start(steps), (std::vector<int>{0, 1, 0, 3}));
}

}  // namespace
}  // namespace luminal::compiler
