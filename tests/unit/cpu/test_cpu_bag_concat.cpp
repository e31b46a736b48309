// BagConcat (x0 = [x, bag_0, ..., bag_{F-1}], DLRM-v2's sparse path) on the CPU backend, outputs
// poisoned first: f32 / bf16, i32 / i64 indices, sum / mean, multi-hot and empty bags, against a
// double loop and the reference runtime's decomposition; a bad index raises at the next read.
#include <cmath>
#include <random>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cpu_test_util.h"

#include "custom/bag_concat/op.h"
#include "luminal/compile.h"
#include "luminal/cpu.h"
#include "luminal/reference.h"

namespace luminal {
namespace {

struct Case {
  int64_t batch, d;
  std::vector<int64_t> rows;
  DType dt, it;
  nn::BagMode mode;
  std::vector<float> x;                      // [B, d]
  std::vector<std::vector<float>> tables;    // [rows_t, d] each (bf16-exact values)
  std::vector<std::vector<int64_t>> indices, offsets;
};

float bf16_exact(float v) { return float(bf16(v)); }

Case random_case(int64_t batch, int64_t d, std::vector<int64_t> rows, DType dt, DType it, nn::BagMode mode,
                 uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  Case c{batch, d, rows, dt, it, mode, {}, {}, {}, {}};
  for (int64_t i = 0; i < batch * d; ++i) c.x.push_back(bf16_exact(u(rng)));
  for (int64_t r : rows) {
    std::vector<float> t;
    for (int64_t i = 0; i < r * d; ++i) t.push_back(bf16_exact(u(rng)));
    c.tables.push_back(t);
    std::vector<int64_t> idx, off;
    for (int64_t b = 0; b < batch; ++b) {
      off.push_back(int64_t(idx.size()));
      const int64_t len = std::uniform_int_distribution<int64_t>(0, 6)(rng);  // empty bags too
      for (int64_t j = 0; j < len; ++j) idx.push_back(std::uniform_int_distribution<int64_t>(0, r - 1)(rng));
    }
    if (idx.empty()) idx.push_back(0), off.back() = 0;  // at least one index (a 0-length input)
    c.indices.push_back(idx);
    c.offsets.push_back(off);
  }
  return c;
}

std::vector<double> loops(const Case& c) {
  const int64_t w = (1 + int64_t(c.rows.size())) * c.d;
  std::vector<double> out(size_t(c.batch * w));
  for (int64_t b = 0; b < c.batch; ++b) {
    for (int64_t k = 0; k < c.d; ++k) out[size_t(b * w + k)] = c.x[size_t(b * c.d + k)];
    for (size_t t = 0; t < c.rows.size(); ++t) {
      const int64_t lo = c.offsets[t][size_t(b)];
      const int64_t hi = b + 1 < c.batch ? c.offsets[t][size_t(b + 1)] : int64_t(c.indices[t].size());
      for (int64_t k = 0; k < c.d; ++k) {
        double s = 0;
        for (int64_t j = lo; j < hi; ++j) s += c.tables[t][size_t(c.indices[t][size_t(j)] * c.d + k)];
        if (c.mode == nn::BagMode::Mean && hi > lo) s /= double(hi - lo);
        out[size_t(b * w + int64_t(1 + t) * c.d + k)] = s;
      }
    }
  }
  return out;
}

struct Bound {
  GraphTensor x, out;
  std::vector<GraphTensor> tables, indices, offsets;
};

Bound build(Graph& g, const Case& c) {
  Bound b;
  b.x = g.named_tensor("x", {c.batch, c.d}, c.dt);
  for (size_t t = 0; t < c.rows.size(); ++t) {
    b.tables.push_back(g.named_tensor(fmt::format("table_{}", t), {c.rows[t], c.d}, c.dt));
    b.indices.push_back(g.named_tensor(fmt::format("indices_{}", t), {int64_t(c.indices[t].size())}, c.it));
    b.offsets.push_back(g.named_tensor(fmt::format("offsets_{}", t), {c.batch}, c.it));
  }
  b.out = custom::bag_concat(b.x, b.tables, b.indices, b.offsets, c.mode).cast(DType::F32).output();
  return b;
}

void set_floats(Runtime& rt, const GraphTensor& t, const std::vector<float>& v, DType dt) {
  if (dt == DType::F32) return rt.set_data(t, std::span<const float>(v));
  std::vector<bf16> h(v.begin(), v.end());
  rt.set_data(t, std::span<const bf16>(h));
}

void set_ints(Runtime& rt, const GraphTensor& t, const std::vector<int64_t>& v, DType it) {
  if (it == DType::I64) return rt.set_data(t, std::span<const int64_t>(v));
  std::vector<int32_t> n(v.begin(), v.end());
  rt.set_data(t, std::span<const int32_t>(n));
}

void set_inputs(Runtime& rt, const Bound& b, const Case& c) {
  set_floats(rt, b.x, c.x, c.dt);
  for (size_t t = 0; t < c.rows.size(); ++t) {
    set_floats(rt, b.tables[t], c.tables[t], c.dt);
    set_ints(rt, b.indices[t], c.indices[t], c.it);
    set_ints(rt, b.offsets[t], c.offsets[t], c.it);
  }
}

using cpu_test::cpu_plan;

TEST(CpuBagConcat, HostKernelMatchesLoopsAndReference) {
  uint32_t seed = 1;
  for (DType dt : {DType::F32, DType::BF16})
    for (DType it : {DType::I32, DType::I64})
      for (nn::BagMode mode : {nn::BagMode::Sum, nn::BagMode::Mean})
        for (int64_t d : {3, 16, 128}) {
          const Case c = random_case(37, d, {50, 3, 1000}, dt, it, mode, seed++);
          Graph g;
          const Bound b = build(g, c);
          const auto rt = cpu_plan(g);
          set_inputs(*rt, b, c);
          rt->execute();
          const std::vector<float> got = rt->get_f32(b.out);
          EXPECT_NE(rt->stats().steps.at(0).find("bag_concat (host kernel)"), std::string::npos) << rt->stats().steps[0];
          ReferenceRuntime ref(g);
          set_inputs(ref, b, c);
          ref.execute();
          const std::vector<float> want_ref = ref.get_f32(b.out);
          const std::vector<double> want = loops(c);
          ASSERT_EQ(got.size(), want.size());
          const double rtol = dt == DType::BF16 ? 1.0 / 128 : 1e-6;
          for (size_t i = 0; i < want.size(); ++i) {
            ASSERT_NEAR(got[i], want[i], 1e-5 + rtol * std::abs(want[i])) << "seed " << seed - 1 << " element " << i;
            ASSERT_NEAR(got[i], want_ref[i], 1e-5 + rtol * std::abs(want[i])) << "seed " << seed - 1 << " element " << i;
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
}

}  // namespace
}  // namespace luminal
