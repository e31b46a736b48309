// Graph branches: independent chains captured on parallel streams (with and without branch
// priorities) compute what one stream and the reference compute, with arena memory reused between
// the branches' intermediates.
#include <gtest/gtest.h>

#include <cstdlib>

#include "gpu/gpu_test_util.h"
#include "luminal/reference.h"
#include "luminal/cuda.h"
#include "luminal/compile.h"

namespace luminal {
namespace {


class CudaBranches : public gpu_test::CudaTest {};

// Two chains (each with cuBLASLt matmuls and generated kernels) that meet in one output, and a
// third chain on its own output; several intermediates die early, so the arena reuses them.
struct ForkJoin {
  Graph g;
  GraphTensor x, y, w1, w2, w3, out, side;
  ForkJoin() {
    x = g.named_tensor("x", {Expr::sym("rows"), 256});
    y = g.named_tensor("y", {Expr::sym("rows"), 256});
    w1 = g.named_tensor("w1", {256, 256}).persist();
    w2 = g.named_tensor("w2", {256, 256}).persist();
    w3 = g.named_tensor("w3", {256, 256}).persist();
    GraphTensor a = x.matmul(w1).relu().matmul(w2).exp().sum(1);
    GraphTensor b = (y * 0.5).matmul(w3).sigmoid().max(1);
    out = (a.log() + b).output();
    side = (y.sin() * x.cos()).sum(1).output();
  }
};

std::vector<std::vector<float>> run(Runtime& rt, ForkJoin& f, int64_t rows, unsigned seed) {
  for (auto [t, s] : {std::pair{&f.w1, 1u}, {&f.w2, 2u}, {&f.w3, 3u}}) {
    const std::vector<float> w = gpu_test::spread(256 * 256, -0.06f, 0.06f, s);
    rt.set_data(*t, std::span<const float>(w));
  }
  const std::vector<float> xs = gpu_test::spread(size_t(rows) * 256, -1, 1, seed);
  const std::vector<float> ys = gpu_test::spread(size_t(rows) * 256, -2, 2, seed + 7);
  rt.set_data(f.x, std::span<const float>(xs));
  rt.set_data(f.y, std::span<const float>(ys));
  rt.execute({{"rows", rows}});
  return {rt.get_f32(f.out), rt.get_f32(f.side)};
}

TEST_F(CudaBranches, ParallelBranchesMatchOneStreamAndTheReference) {
  ForkJoin f;
  cuda::CudaOptions one, four;
  one.graph_branches = 1;
  four.graph_branches = 4;
  one.poison = four.poison = true;  // outputs and arena start as NaN every execute
  cuda::CudaOptions prioritized_opts = four;  // the longest chain's stream at the highest priority
  prioritized_opts.branch_priorities = true;
  // The same (default) plan on both: the search could pick different reduction tilings or
  // cuBLASLt algorithms for each, and then their sums would differ in rounding.
  CompileOptions same;
  same.search.enabled = false;
  Executable serial(f.g, cuda::backend(one), same), branched(f.g, cuda::backend(four), same),
      prioritized(f.g, cuda::backend(prioritized_opts), same);
  ReferenceRuntime cpu(f.g);
  for (int64_t rows : {64, 700, 64}) {
    for (unsigned rep = 0; rep < 3; ++rep) {  // first execute runs step by step, then the graph
      const auto a = run(branched, f, rows, 10 * unsigned(rows) + rep);
      const auto p = run(prioritized, f, rows, 10 * unsigned(rows) + rep);
      const auto s = run(serial, f, rows, 10 * unsigned(rows) + rep);
      const auto ref = run(cpu, f, rows, 10 * unsigned(rows) + rep);
      for (size_t o = 0; o < a.size(); ++o) {
        const std::string what = "output " + std::to_string(o) + " rows " + std::to_string(rows);
        // The same kernels and cuBLASLt algorithms in another stream order (no atomics in the
        // generated reductions): bitwise equal.
        gpu_test::expect_all_near(a[o], s[o], 0, 0, what + " branched vs serial");
        gpu_test::expect_all_near(p[o], s[o], 0, 0, what + " prioritized branches vs serial");
        gpu_test::expect_all_near(a[o], ref[o], 1e-4, 1e-4, what + " vs reference");
      }
    }
  }
  EXPECT_EQ(serial.stats().counters.at("graph_streams"), 1);
  EXPECT_GE(branched.stats().counters.at("graph_streams"), 2) << "the three chains should not share one stream";
  EXPECT_EQ(branched.stats().counters.at("graph_priorities"), 0);
  EXPECT_GE(prioritized.stats().counters.at("graph_streams"), 2);
  EXPECT_EQ(prioritized.stats().counters.at("graph_priorities"), 1);
}

}  // namespace
}  // namespace luminal
