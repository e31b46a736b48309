// The GEMV path of cuBLASLt matmul steps (MatmulStep::gemv_max_m, src/cuda/kernels/gemv.cuh):
// a Linear x[s, k] @ W[n, k]^T on the GPU against the CPU reference at row counts on both sides of
// the GEMV limit (8), for f32 / f16 / bf16, with a bias and ReLU, batched, and a layout the
// kernel refuses (odd k: cuBLASLt runs). Outputs are poisoned (CudaOptions::poison).
#include <algorithm>
#include <cmath>
#include <cstdlib>

#include <fmt/format.h>

#include "gpu/gpu_test_util.h"
#include "luminal/reference.h"
#include "luminal/nn.h"
#include "gpu_options.h"
#include "luminal/compile.h"

namespace luminal {
namespace {


class CudaGemv : public gpu_test::CudaTest {};

// Every test's options: outputs and arena poisoned before each run, the search off.
test::GpuOptions poisoned() {
  test::GpuOptions o;
  o.cuda.poison = true;
  o.search.enabled = false;
  return o;
}

// Values of dtype dt in a runtime.
void set(Runtime& r, const GraphTensor& t, const std::vector<float>& v, DType dt) {
  if (dt == DType::F32) return r.set_data(t, std::span<const float>(v));
  if (dt == DType::BF16) {
    std::vector<bf16> b;
    for (float x : v) b.emplace_back(x);
    return r.set_data(t, std::span<const bf16>(b));
  }
  std::vector<f16> h;
  for (float x : v) h.emplace_back(x);
  r.set_data(t, std::span<const f16>(h));
}

struct LinearCase {
  DType dtype = DType::F32;
  int64_t k = 256, n = 96;
  bool bias = false, relu = false;
};

// True when the plan has a cuBLASLt step with the GEMV path (its host_ops label says so).
bool has_gemv_step(const Runtime& rt) {
  for (const std::string& op : rt.host_ops())
    if (op.find("GEMV kernel at m <= 8") != std::string::npos) return true;
  return false;
}

// Absolute tolerance of a k-term dot product of values in [-1, 1) against the reference runtime,
// which rounds each product to a 16-bit dtype (2^-9 relative for bf16, 2^-12 for f16) before the
// sum: the rounding errors add up like a random walk, ~ sqrt(k) * 2^-9 / 3 for bf16; 5 sigma.
// The sums themselves are ~ sqrt(k) / 3, so a wrong row or column is still far outside it.
double sum_tolerance(DType dt, int64_t k, double tol) {
  const double unit = dt == DType::BF16 ? 1.0 / 512 : dt == DType::F16 ? 1.0 / 4096 : 0.0;
  return std::max(tol, 5 * std::sqrt(double(k)) * unit / 3);
}

// relu?(x @ W^T + b?) over a symbolic row count s, hinted at 4096 so the lowering puts it on
// cuBLASLt; checked against the CPU reference at each s in `rows`.
void check_linear(const LinearCase& c, std::initializer_list<int64_t> rows, double tol) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {Expr::sym("s"), c.k}, c.dtype);
  GraphTensor w = g.named_tensor("w", {c.n, c.k}, c.dtype).persist();
  GraphTensor y = x.matmul(w.transpose(0, 1));
  GraphTensor b = g.named_tensor("b", {c.n}, c.dtype).persist();
  if (c.bias) y = y + b.expand_dim(0, Expr::sym("s"));
  if (c.relu) y = y.relu();
  y = y.output();
  test::GpuOptions opts = poisoned();
  opts.dim_hints = {{"s", 4096}};
  Executable rt(g, cuda::backend(opts.cuda), opts);
  ReferenceRuntime cpu(g);
  ASSERT_TRUE(has_gemv_step(rt)) << "expected a cuBLASLt step offering the GEMV path";
  const std::vector<float> wv = gpu_test::spread(size_t(c.n * c.k), -0.5f, 0.5f, 7);
  const std::vector<float> bv = gpu_test::spread(size_t(c.n), -1, 1, 8);
  for (Runtime* r : {static_cast<Runtime*>(&rt), static_cast<Runtime*>(&cpu)}) {
    set(*r, w, wv, c.dtype);
    if (c.bias) set(*r, b, bv, c.dtype);
  }
  for (int64_t s : rows) {
    const std::vector<float> xv = gpu_test::spread(size_t(s * c.k), -1, 1, unsigned(s) + 20);
    set(rt, x, xv, c.dtype);
    set(cpu, x, xv, c.dtype);
    rt.execute({{"s", s}});
    cpu.execute({{"s", s}});
    gpu_test::expect_all_near(rt.get_f32(y), cpu.get_f32(y), sum_tolerance(c.dtype, c.k, tol), tol,
                              fmt::format("{} s={} k={} n={}", dtype_name(c.dtype), s, c.k, c.n));
  }
}

TEST_F(CudaGemv, LinearMatchesReferenceOnBothSidesOfTheRowLimit) {
  check_linear({DType::F32, 256, 96}, {1, 3, 8, 9, 1}, 1e-5);
  check_linear({DType::BF16, 2048, 512}, {1, 2, 8, 16, 1}, 2e-2);
  check_linear({DType::F16, 512, 40}, {1, 7, 8, 9}, 5e-3);
}

TEST_F(CudaGemv, BiasAndReluEpilogue) {
  check_linear({DType::F32, 128, 64, true, true}, {1, 5, 12}, 1e-5);
  check_linear({DType::BF16, 1024, 200, true, true}, {1, 4}, 2e-2);
}

TEST_F(CudaGemv, KTailAndUnalignedLayoutsStayCorrect) {
  // k = 8 * 32 * 4 + 8 * 32 (the unrolled loop plus one tail step) and k = 40 (tail only).
  check_linear({DType::BF16, 1280, 33}, {1, 3}, 2e-2);
  check_linear({DType::BF16, 40, 17}, {1, 8}, 2e-2);
  // k = 13 is not a multiple of the vector width: cuBLASLt runs it.
  check_linear({DType::F32, 13, 64}, {1, 2, 9}, 1e-5);
}

TEST_F(CudaGemv, BatchedProductsMatchReference) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {3, Expr::sym("s"), 1024}, DType::BF16);
  GraphTensor bt = g.named_tensor("bt", {3, 72, 1024}, DType::BF16).persist();
  GraphTensor y = a.matmul(bt.transpose(1, 2)).output();
  test::GpuOptions opts = poisoned();
  opts.dim_hints = {{"s", 4096}};
  Executable rt(g, cuda::backend(opts.cuda), opts);
  ReferenceRuntime cpu(g);
  ASSERT_TRUE(has_gemv_step(rt));
  const std::vector<float> bv = gpu_test::spread(3 * 72 * 1024, -1, 1, 4);
  set(rt, bt, bv, DType::BF16);
  set(cpu, bt, bv, DType::BF16);
  for (int64_t s : {2, 1, 11}) {
    const std::vector<float> av = gpu_test::spread(size_t(3 * s * 1024), -1, 1, unsigned(s));
    for (Runtime* r : {static_cast<Runtime*>(&rt), static_cast<Runtime*>(&cpu)}) {
      set(*r, a, av, DType::BF16);
      r->execute({{"s", s}});
    }
    gpu_test::expect_all_near(rt.get_f32(y), cpu.get_f32(y), sum_tolerance(DType::BF16, 1024, 2e-2),
                              2e-2, fmt::format("batched bf16 s={}", s));
  }
}

// Under TF32 precision the GEMV kernel still computes in fp32: inputs 1 + 2^-14 * i, whose
// fraction TF32 would drop, reproduce the fp32 reference at m = 1. (This cannot tell which path
// ran: on the H200 cuBLASLt's m = 1 kernel was exact too, 2026-12-04; with gemv.enabled off the
// result only has to be right to TF32.)
TEST_F(CudaGemv, RunsAtFewRowsAndGemvOptionTurnsItOff) {
  auto max_error = [](bool gemv) {
    Graph g;
    GraphTensor x = g.named_tensor("x", {Expr::sym("s"), 512});
    GraphTensor w = g.named_tensor("w", {64, 512}).persist();
    GraphTensor y = x.matmul(w.transpose(0, 1)).output();
    test::GpuOptions opts = poisoned();
    opts.precision = Precision::TF32;
    opts.dim_hints = {{"s", 4096}};
    opts.cuda.gemv.enabled = gemv;
    Executable rt(g, cuda::backend(opts.cuda), opts);
    ReferenceRuntime cpu(g);
    std::vector<float> xv(512), wv(64 * 512);
    for (size_t i = 0; i < xv.size(); ++i) xv[i] = 1.0f + float(i % 7 + 1) / 16384.0f;
    for (size_t i = 0; i < wv.size(); ++i) wv[i] = 1.0f + float(i % 5 + 1) / 16384.0f;
    for (Runtime* r : {static_cast<Runtime*>(&rt), static_cast<Runtime*>(&cpu)}) {
      r->set_data(x, std::span<const float>(xv));
      r->set_data(w, std::span<const float>(wv));
      r->execute({{"s", 1}});
    }
    const std::vector<float> got = rt.get_f32(y), want = cpu.get_f32(y);
    double err = 0;
    for (size_t i = 0; i < got.size(); ++i) err = std::max(err, double(std::abs(got[i] - want[i])));
    return err;
  };
  const double gemv = max_error(true), cublaslt = max_error(false);
  EXPECT_LT(gemv, 1e-3) << "the GEMV kernel computes in fp32";
  EXPECT_LT(cublaslt, 512 * 4.0 / 1024) << "cuBLASLt within TF32's 2^-10 per product";
}

// Llama's decode pattern: q, k, v = x @ Wq^T, x @ Wk^T, x @ Wv^T with an op on q between them in
// the plan, and gate / up of another input: at m = 1 the runtime merges them into grouped GEMV
// launches (3 + 2 products: 3 launches saved; q joins although the op on q runs between, because
// the arena keeps k's and v's outputs off q's); at m = 12 cuBLASLt runs and nothing is grouped;
// gemv.group off keeps one launch per product. Every output against the CPU reference.
TEST_F(CudaGemv, ProductsOfOneInputShareALaunch) {
  for (bool group : {true, false}) {
    Graph g;
    const Expr s = Expr::sym("s");
    GraphTensor x = g.named_tensor("x", {s, 512}, DType::BF16);
    auto weight = [&](const char* name, int64_t n, int64_t k) {
      return g.named_tensor(name, {n, k}, DType::BF16).persist();
    };
    const GraphTensor wq = weight("wq", 512, 512), wk = weight("wk", 128, 512),
                      wv = weight("wv", 128, 512), wg = weight("wg", 1024, 512),
                      wu = weight("wu", 1024, 512);
    GraphTensor q = x.matmul(wq.transpose(0, 1)) * 0.5;
    GraphTensor k = x.matmul(wk.transpose(0, 1)).output();
    GraphTensor v = x.matmul(wv.transpose(0, 1)).output();
    const GraphTensor h = (q + x).sin();  // gate / up read another input than x
    q.output();
    GraphTensor gate = h.matmul(wg.transpose(0, 1)).output();
    GraphTensor up = h.matmul(wu.transpose(0, 1)).output();
    test::GpuOptions opts = poisoned();
    opts.dim_hints = {{"s", 4096}};
    opts.cuda.gemv.group = group;
    Executable rt(g, cuda::backend(opts.cuda), opts);
    ReferenceRuntime cpu(g);
    unsigned seed = 40;
    for (const GraphTensor& w : {wq, wk, wv, wg, wu}) {
      const std::vector<float> wv_ =
          gpu_test::spread(size_t(w.dims()[0].as_const().value() * 512), -0.5f, 0.5f, ++seed);
      set(rt, w, wv_, DType::BF16);
      set(cpu, w, wv_, DType::BF16);
    }
    for (int64_t rows : {1, 12, 1}) {
      const std::vector<float> xv = gpu_test::spread(size_t(rows * 512), -1, 1, unsigned(rows));
      set(rt, x, xv, DType::BF16);
      set(cpu, x, xv, DType::BF16);
      rt.execute({{"s", rows}});
      cpu.execute({{"s", rows}});
      EXPECT_EQ(rt.stats().counters.at("gemv_launches_saved"), group && rows == 1 ? 3 : 0) << "rows " << rows;
      for (const GraphTensor& out : {q, k, v, gate, up})
        gpu_test::expect_all_near(rt.get_f32(out), cpu.get_f32(out),
                                  sum_tolerance(DType::BF16, 512, 2e-2), 2e-2,
                                  fmt::format("group {} rows {} node {}", group, rows, out.id));
    }
  }
}

// Llama's residual stream: x1 = x + a @ Wo^T, x2 = x1 + x1 @ Wd^T, y = x2 @ Wy^T (each sum a
// later product's input, so materialized). At m = 1 each Add is done by its GEMV (2 launches
// saved; the GEMV rounds the product to bf16 before adding, as the graph does); at m = 12
// cuBLASLt runs and the Adds their own kernels; gemv.residual off keeps them too. Outputs
// against the CPU reference, poisoned first.
TEST_F(CudaGemv, ResidualAddsRideOnTheirGemv) {
  for (bool fuse : {true, false}) {
    Graph g;
    const Expr s = Expr::sym("s");
    GraphTensor x = g.named_tensor("x", {s, 256}, DType::BF16);
    GraphTensor a = g.named_tensor("a", {s, 512}, DType::BF16);
    GraphTensor wo = g.named_tensor("wo", {256, 512}, DType::BF16).persist();
    GraphTensor wd = g.named_tensor("wd", {256, 256}, DType::BF16).persist();
    GraphTensor wy = g.named_tensor("wy", {64, 256}, DType::BF16).persist();
    GraphTensor x1 = x + a.matmul(wo.transpose(0, 1));
    GraphTensor x2 = x1 + x1.matmul(wd.transpose(0, 1));
    GraphTensor y = x2.matmul(wy.transpose(0, 1));
    for (GraphTensor* t : {&x1, &x2, &y}) t->output();
    test::GpuOptions opts = poisoned();
    opts.dim_hints = {{"s", 4096}};
    opts.cuda.gemv.residual = fuse;
    Executable rt(g, cuda::backend(opts.cuda), opts);
    ReferenceRuntime cpu(g);
    for (Runtime* r : {static_cast<Runtime*>(&rt), static_cast<Runtime*>(&cpu)}) {
      set(*r, wo, gpu_test::spread(256 * 512, -0.5f, 0.5f, 61), DType::BF16);
      set(*r, wd, gpu_test::spread(256 * 256, -0.5f, 0.5f, 62), DType::BF16);
      set(*r, wy, gpu_test::spread(64 * 256, -0.5f, 0.5f, 63), DType::BF16);
    }
    for (int64_t rows : {1, 12, 1}) {
      for (Runtime* r : {static_cast<Runtime*>(&rt), static_cast<Runtime*>(&cpu)}) {
        set(*r, x, gpu_test::spread(size_t(rows * 256), -4, 4, unsigned(rows) + 70), DType::BF16);
        set(*r, a, gpu_test::spread(size_t(rows * 512), -1, 1, unsigned(rows) + 80), DType::BF16);
        r->execute({{"s", rows}});
      }
      EXPECT_EQ(rt.stats().counters.at("gemv_launches_saved"), fuse && rows == 1 ? 2 : 0) << "rows " << rows;
      // x1's own bf16 rounding (~0.03 at |x1| ~ 5) reaches x2 and y through 256-term sums (cuBLASLt
      // at m = 12 was 0.28 off on x2 on the H200, with or without fusion): wider bounds there; a
      // missing or doubled residual would be off by |x1|, several units.
      gpu_test::expect_all_near(rt.get_f32(x1), cpu.get_f32(x1),
                                sum_tolerance(DType::BF16, 512, 2e-2), 2e-2,
                                fmt::format("fuse {} rows {} x1", fuse, rows));
      gpu_test::expect_all_near(rt.get_f32(x2), cpu.get_f32(x2), 0.6, 5e-2,
                                fmt::format("fuse {} rows {} x2", fuse, rows));
      gpu_test::expect_all_near(rt.get_f32(y), cpu.get_f32(y), 2.0, 5e-2,
                                fmt::format("fuse {} rows {} y", fuse, rows));
    }
  }
}

}  // namespace
}  // namespace luminal
