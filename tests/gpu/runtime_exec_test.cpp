// Running plans on the CUDA runtime: dynamic dims, graphs on and off, pipelining, big uploads.
#include <gtest/gtest.h>

#include <cmath>

#include "gpu/gpu_test_util.h"
#include "luminal/reference.h"
#include "luminal/cuda.h"
#include "luminal/compile.h"

namespace luminal {
namespace {

using gpu_test::CudaTest;

class CudaExec : public CudaTest {};

TEST_F(CudaExec, OneGraphManyBatchSizes) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {Expr::sym("batch"), 4});
  GraphTensor y = (x * 2.0 + 1.0).sum(1).output();  // y[r] = sum_j (2 x[r, j] + 1)
  GraphTensor z = (x * x).output();
  Executable rt(g, cuda::backend());
  for (int64_t b : {1, 5, 3, 64, 5, 1000, 1}) {
    const std::vector<float> xs = gpu_test::spread(size_t(b) * 4, -3, 3, unsigned(b));
    rt.set_data(x, std::span<const float>(xs));
    rt.execute({{"batch", b}});
    std::vector<float> want_y(size_t(b), 0.0f), want_z(xs.size());
    for (int64_t r = 0; r < b; ++r)
      for (int j = 0; j < 4; ++j) want_y[size_t(r)] += 2.0f * xs[size_t(r * 4 + j)] + 1.0f;
    for (size_t i = 0; i < xs.size(); ++i) want_z[i] = xs[i] * xs[i];
    gpu_test::expect_all_near(rt.get_f32(y), want_y, 1e-5, 1e-5,
                              "sum at batch " + std::to_string(b));
    gpu_test::expect_all_near(rt.get_f32(z), want_z, 0, 1e-7,
                              "square at batch " + std::to_string(b));
  }
}

// A few kernels with reductions and broadcasts, compared across graph on/off and the reference.
struct MixedGraph {
  Graph g;
  GraphTensor x, w, out1, out2, out3;
  MixedGraph() {
    x = g.named_tensor("x", {Expr::sym("rows"), 33});
    w = g.named_tensor("w", {33}).persist();
    GraphTensor xw = x * w.expand_dim(0, Expr::sym("rows"));
    out1 = xw.softmax(1).output();
    out2 = (xw.exp().sum(1) + x.max(1)).output();
    out3 = (xw.sum(1) / 33.0).sqrt().output();
  }
};

std::vector<std::vector<float>> run_mixed(Runtime& rt, MixedGraph& m, int64_t rows, int reps) {
  std::vector<std::vector<float>> outs;
  const std::vector<float> ws = gpu_test::spread(33, 0.1f, 1.0f, 9);
  rt.set_data(m.w, std::span<const float>(ws));
  for (int r = 0; r < reps; ++r) {
    const std::vector<float> xs =
        gpu_test::spread(size_t(rows) * 33, 0.05f, 2.0f, unsigned(rows + r));
    rt.set_data(m.x, std::span<const float>(xs));
    rt.execute({{"rows", rows}});
  }
  for (GraphTensor* t : {&m.out1, &m.out2, &m.out3}) outs.push_back(rt.get_f32(*t));
  return outs;
}

TEST_F(CudaExec, GraphsOnAndOffAgreeWithTheReference) {
  MixedGraph m;
  cuda::CudaOptions off;
  off.cuda_graph = false;
  Executable with(m.g, cuda::backend()), without(m.g, cuda::backend(off));
  ReferenceRuntime cpu(m.g);
  for (int64_t rows : {7, 300, 7}) {
    for (int reps : {1, 3}) {
      const auto a = run_mixed(with, m, rows, reps);
      const auto b = run_mixed(without, m, rows, reps);
      const auto ref = run_mixed(cpu, m, rows, reps);
      for (size_t o = 0; o < a.size(); ++o) {
        const std::string what = "output " + std::to_string(o) + " rows " + std::to_string(rows);
        gpu_test::expect_all_near(a[o], b[o], 1e-6, 1e-6, what + " graph vs no graph");
        gpu_test::expect_all_near(a[o], ref[o], 1e-5, 1e-5, what + " vs reference");
      }
    }
  }
}

TEST_F(CudaExec, PipelinedExecutesWithoutReadsKeepInputsApart) {
  // Uploads and executes back to back with rare reads: 600 uploads of 4 KB wrap the 1 MiB pinned
  // staging buffer, which must never overwrite data a queued copy has not consumed yet.
  Graph g;
  GraphTensor a = g.named_tensor("a", {1000});
  GraphTensor b = g.named_tensor("b", {1000});
  GraphTensor y = (a * 2.0 + b).output();
  Executable rt(g, cuda::backend());
  for (int it = 0; it < 300; ++it) {
    const std::vector<float> as = gpu_test::spread(1000, -1, 1, unsigned(2 * it + 1));
    const std::vector<float> bs = gpu_test::spread(1000, -1, 1, unsigned(2 * it + 2));
    rt.set_data(a, std::span<const float>(as));
    rt.set_data(b, std::span<const float>(bs));
    rt.execute();
    if (it % 97 != 0 && it != 299) continue;
    std::vector<float> want(1000);
    for (size_t i = 0; i < 1000; ++i) want[i] = 2.0f * as[i] + bs[i];
    gpu_test::expect_all_near(rt.get_f32(y), want, 1e-6, 1e-6, "iteration " + std::to_string(it));
  }
}

TEST_F(CudaExec, LargeUploadsGoThroughStagingInChunks) {
  const int64_t n = 20'000'000;  // 80 MB: more than one staging chunk
  Graph g;
  GraphTensor x = g.named_tensor("x", {n});
  GraphTensor y = (x * 2.0).output();
  Executable rt(g, cuda::backend());
  std::vector<float> xs(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) xs[size_t(i)] = float(i % 1000003) + 0.5f;
  rt.set_data(x, std::span<const float>(xs));
  rt.execute();
  const std::vector<float> out = rt.get_f32(y);
  ASSERT_EQ(out.size(), size_t(n));
  for (int64_t i = 0; i < n; i += 997) ASSERT_EQ(out[size_t(i)], 2.0f * xs[size_t(i)]) << i;
  ASSERT_EQ(out.back(), 2.0f * xs.back());
}

TEST_F(CudaExec, HostOpsAndKernelCountDescribeThePlan) {
  MixedGraph m;
  Executable rt(m.g, cuda::backend());
  const std::vector<std::string> ops = rt.host_ops();
  EXPECT_EQ(ops.size(), rt.kernel_count());
  EXPECT_GE(rt.kernel_count(), 3u);  // three outputs, at least one kernel each
  for (const std::string& op : ops) EXPECT_EQ(op.rfind("kernel ", 0), 0u) << op;
}

}  // namespace
}  // namespace luminal
