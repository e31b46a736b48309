// BagConcat (x0 = [x, bag_0, ..., bag_{F-1}], DLRM-v2's sparse path) on the CPU backend, outputs
// poisoned first: f32 / bf16, i32 / i64 indices, sum / mean, multi-hot and empty bags, against a
// double loop and the reference runtime's decomposition, as one op and split (the bags without x,
// then a concat: the form that runs beside the bottom MLP); a bad index raises at the next read.
#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cpu_test_util.h"

#include "custom/bag_concat/test_util.h"
#include "luminal/compile.h"
#include "luminal/cpu.h"
#include "luminal/reference.h"

namespace luminal {
namespace {

using bag_concat_test::Case;
using bag_concat_test::random_case;
using bag_concat_test::loops;
using bag_concat_test::Bound;
using bag_concat_test::build;
using bag_concat_test::set_inputs;
using cpu_test::cpu_plan;

// True when a step of the plan runs the bag_concat host kernel (the op, not its decomposition).
bool runs_host_kernel(const Executable& rt) {
  const auto& steps = rt.stats().steps;
  return std::any_of(steps.begin(), steps.end(),
                     [](const std::string& s) { return s.find("bag_concat (host kernel)") != std::string::npos; });
}

TEST(CpuBagConcat, HostKernelMatchesLoopsAndReference) {
  uint32_t seed = 1;
  for (DType dt : {DType::F32, DType::BF16})
    for (DType it : {DType::I32, DType::I64})
      for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
        for (int64_t d : {3, 16, 128}) {
          const Case open = random_case(37, d, {50, 3, 1000}, dt, it, mode, seed++);
          // Closed offsets (a KeyedJaggedTensor's keys) for every other case; split for every third.
          const Case c = seed % 2 == 0 ? bag_concat_test::closed_case(open) : open;
          const bool split = seed % 3 == 0;
          SCOPED_TRACE(fmt::format("seed {}{}{}", seed - 1, c.closed ? " closed" : "", split ? " split" : ""));
          Graph g;
          const Bound b = build(g, c, false, true, split);
          const auto rt = cpu_plan(g);
          set_inputs(*rt, b, c);
          rt->execute();
          const std::vector<float> got = rt->get_f32(b.out);
          EXPECT_TRUE(runs_host_kernel(*rt));
          ReferenceRuntime ref(g);
          set_inputs(ref, b, c);
          ref.execute();
          const std::vector<float> want_ref = ref.get_f32(b.out);
          const std::vector<double> want = loops(c);
          ASSERT_EQ(got.size(), want.size());
          const double rtol = dt == DType::BF16 ? 1.0 / 128 : 1e-6;
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 1e-5 + rtol * std::abs(want[i]))
                << "seed " << seed - 1 << (c.closed ? " closed" : "") << " element " << i;
            ASSERT_NEAR(got[i], want_ref[i], 1e-5 + rtol * std::abs(want[i])) << "seed " << seed - 1 << " element " << i;
          }
        }
}

// RowwiseU8 tables (DLRM int8 precision): row r = code * scale_r + bias_r, pooled in fp32. The host
// kernel and the reference's decomposition against the same loops on the dequantized rows.
TEST(CpuBagConcat, RowwiseU8TablesMatchLoopsAndReference) {
  for (DType dt : {DType::F32, DType::BF16})
    for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
      for (bool closed : {false, true}) {
        const bool split = closed == (mode == nn::BagMode::Sum);  // half the cases without x, then a concat
        SCOPED_TRACE(fmt::format("{}{}", closed ? "closed" : "open", split ? " split" : ""));
        const Case open = random_case(29, 16, {40, 7}, dt, DType::I64, mode, dt == DType::F32 ? 71 : 72);
        const bag_concat_test::U8Case u = bag_concat_test::u8_case(closed ? bag_concat_test::closed_case(open) : open, 5);
        Graph g;
        const bag_concat_test::U8Bound b = bag_concat_test::build_u8(g, u, split);
        const auto rt = cpu_plan(g);
        bag_concat_test::set_u8_inputs(*rt, b, u);
        rt->execute();
        const std::vector<float> got = rt->get_f32(b.out);
        EXPECT_TRUE(runs_host_kernel(*rt));
        ReferenceRuntime ref(g);
        bag_concat_test::set_u8_inputs(ref, b, u);
        ref.execute();
        const std::vector<float> want_ref = ref.get_f32(b.out);
        const std::vector<double> want = loops(u.c);
        ASSERT_EQ(got.size(), want.size());
        const double rtol = dt == DType::BF16 ? 1.0 / 128 : 1e-5;
        for (size_t i = 0; i < want.size(); ++i) {
          ASSERT_NEAR(got[i], want[i], 1e-5 + rtol * std::abs(want[i])) << dtype_name(dt) << " element " << i;
          ASSERT_NEAR(want_ref[i], want[i], 1e-5 + rtol * std::abs(want[i]))
              << dtype_name(dt) << (closed ? " closed" : "") << " reference, element " << i;
        }
      }
}

TEST(CpuBagConcat, BadIndexRaisesAtTheNextRead) {
  Case c = random_case(8, 4, {10, 20}, DType::F32, DType::I32, nn::BagMode::Sum, 99);
  c.indices[1][0] = 20;  // table 1 has 20 rows
  Graph g;
  const Bound b = build(g, c);
  const auto rt = cpu_plan(g);
  set_inputs(*rt, b, c);
  rt->execute();
  EXPECT_THROW((void)rt->get_f32(b.out), BadInputError);
}

TEST(CpuBagConcat, RefusesMismatchedTables) {
  Graph g;
  const GraphTensor x = g.named_tensor("x", {4, 8});
  const GraphTensor t = g.named_tensor("t", {10, 4}), i = g.named_tensor("i", {5}, DType::I32),
                    o = g.named_tensor("o", {4}, DType::I32);
  EXPECT_THROW(custom::bag_concat(x, {t}, {i}, {o}, nn::BagMode::Sum), std::invalid_argument);  // d 4 vs 8
  const GraphTensor codes = g.named_tensor("codes", {10, 8}, DType::U8), sb = g.named_tensor("sb", {10, 3});
  EXPECT_THROW(custom::bag_concat(x, {codes}, {i}, {o}, nn::BagMode::Sum, false, {sb}), std::invalid_argument);  // [10, 3]
  EXPECT_THROW(custom::bag_concat(x, {codes}, {i}, {o}, nn::BagMode::Sum), std::invalid_argument);  // u8 without scale_bias
  EXPECT_THROW(custom::bags_concat({t, codes}, {i, i}, {o, o}, nn::BagMode::Sum, DType::F32), std::invalid_argument);
  EXPECT_THROW(custom::bags_concat({t}, {i}, {o}, nn::BagMode::Sum, DType::BF16), std::invalid_argument);  // f32 table
}

}  // namespace
}  // namespace luminal
