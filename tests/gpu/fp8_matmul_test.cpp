// The fp8 precision's GEMMs on the CUDA runtime (device machine only; sm_89+): a bf16
// relu(x @ W^T + b) compiled with Precision::FP8 against an exact host emulation of what it should
// compute (e4m3 rows of x and of W with their scales, src/cuda/runtime/fp8.h), against the bf16
// reference (within the fp8 error bound, and measurably different from it), with the weight
// requantized after a new upload, and left in bf16 where fp8 does not apply. Outputs poisoned.
#include <algorithm>
#include <cmath>
#include <span>

#include <gtest/gtest.h>

#include "cuda/runtime/fp8.h"
#include "gpu/gpu_test_util.h"
#include "gpu_options.h"
#include "luminal/compile.h"
#include "luminal/cuda.h"
#include "luminal/reference.h"

namespace luminal {
namespace {

class CudaFp8 : public gpu_test::CudaTest {
 protected:
  void SetUp() override {
    gpu_test::CudaTest::SetUp();
    if (IsSkipped()) return;
    const DeviceCaps caps = cuda::backend()->caps();
    if (caps.cc_major * 10 + caps.cc_minor < 89) GTEST_SKIP() << "no FP8 tensor cores on " << caps.name;
  }
};

std::vector<bf16> to_bf16(const std::vector<float>& v) {
  std::vector<bf16> b;
  for (float x : v) b.emplace_back(x);
  return b;
}

// What the fp8 GEMM computes, in double from the exact quantized operands, and per output the sum
// of |terms| (the scale of its fp32-accumulation and bf16-output rounding).
struct Emulated {
  std::vector<double> y, magnitude;
};

Emulated emulate(const std::vector<bf16>& x, const std::vector<bf16>& w, const std::vector<bf16>& b,
                 int64_t m, int64_t n, int64_t k) {
  std::vector<uint8_t> xq(static_cast<size_t>(m * k)), wq(static_cast<size_t>(n * k));
  std::vector<float> xs(static_cast<size_t>(m)), ws(static_cast<size_t>(n));
  for (int64_t i = 0; i < m; ++i)
    xs[size_t(i)] = cuda::fp8_quantize_row(&x[size_t(i * k)].bits, k, &xq[size_t(i * k)]);
  for (int64_t j = 0; j < n; ++j)
    ws[size_t(j)] = cuda::fp8_quantize_row(&w[size_t(j * k)].bits, k, &wq[size_t(j * k)]);
  Emulated e{std::vector<double>(size_t(m * n)), std::vector<double>(size_t(m * n))};
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double acc = 0, mag = 0;
      for (int64_t t = 0; t < k; ++t) {
        const double p = double(cuda::e4m3_to_float(xq[size_t(i * k + t)])) *
                         double(cuda::e4m3_to_float(wq[size_t(j * k + t)]));
        acc += p;
        mag += std::abs(p);
      }
      const double scale = double(xs[size_t(i)]) * double(ws[size_t(j)]);
      e.y[size_t(i * n + j)] = std::max(0.0, acc * scale + double(float(b[size_t(j)])));
      e.magnitude[size_t(i * n + j)] = mag * scale;
    }
  return e;
}

struct Linear {
  Graph g;
  GraphTensor x, w, b, y;
  Linear(int64_t n, int64_t k) {
    x = g.named_tensor("x", {Expr::sym("s"), k}, DType::BF16);
    w = g.named_tensor("w", {n, k}, DType::BF16).persist();
    b = g.named_tensor("b", {n}, DType::BF16).persist();
    y = (x.matmul(w.transpose(0, 1)) + b.expand_dim(0, Expr::sym("s"))).relu().output();
  }
};

test::GpuOptions fp8_options() {
  test::GpuOptions o;
  o.precision = Precision::FP8;
  o.cuda.poison = true;
  o.cuda.fp8_timed = false;  // fp8 wherever it qualifies (the timed mode has its own test)
  o.search.enabled = false;
  o.dim_hints = {{"s", 4096}};  // cuBLASLt, not a generated kernel or the GEMV
  return o;
}

// The same weights, bias and activations into every runtime, then one execute of each.
void run_all(const Linear& l, std::initializer_list<Runtime*> runtimes, const std::vector<bf16>& w,
             const std::vector<bf16>& b, const std::vector<bf16>& x, int64_t s) {
  for (Runtime* r : runtimes) {
    r->set_data(l.w, std::span<const bf16>(w));
    r->set_data(l.b, std::span<const bf16>(b));
    r->set_data(l.x, std::span<const bf16>(x));
    r->execute({{"s", s}});
  }
}

int64_t counter(const Executable& rt, const char* name) {
  const PlanStats s = rt.stats();
  auto it = s.counters.find(name);
  return it == s.counters.end() ? -1 : it->second;
}

// got within the emulation's rounding: fp32 accumulation in the tensor cores (Hopper's fp8
// accumulator keeps fewer bits: 2^-12 of the magnitude is generous) and the bf16 output (2^-8).
void expect_matches_emulation(const std::vector<float>& got, const Emulated& e, const char* what) {
  ASSERT_EQ(got.size(), e.y.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const double tol = std::abs(e.y[i]) / 256 + e.magnitude[i] / 4096 + 1e-6;
    ASSERT_LE(std::abs(double(got[i]) - e.y[i]), tol)
        << what << " element " << i << ": got " << got[i] << ", emulated " << e.y[i];
  }
}

TEST_F(CudaFp8, LinearMatchesEmulationAndStaysNearBf16) {
  const int64_t n = 256, k = 512;
  Linear l(n, k);
  Executable rt(l.g, cuda::backend(fp8_options().cuda), fp8_options());
  ReferenceRuntime cpu(l.g);
  // Rows of very different magnitudes: per-row scales keep the small ones accurate.
  std::vector<float> wv = gpu_test::spread(size_t(n * k), -0.5f, 0.5f, 3);
  for (int64_t j = 0; j < n; ++j)
    for (int64_t t = 0; t < k; ++t) wv[size_t(j * k + t)] *= float(1 + j % 7) * 0.01f;
  const std::vector<bf16> w = to_bf16(wv), b = to_bf16(gpu_test::spread(size_t(n), -0.2f, 0.2f, 4));
  for (Runtime* r : {static_cast<Runtime*>(&rt), static_cast<Runtime*>(&cpu)}) {
    r->set_data(l.w, std::span<const bf16>(w));
    r->set_data(l.b, std::span<const bf16>(b));
  }
  for (int64_t s : {64, 300, 64}) {  // a new row count resizes the scratch; back again
    std::vector<float> xv = gpu_test::spread(size_t(s * k), -1, 1, unsigned(s));
    for (int64_t i = 0; i < s; ++i)
      for (int64_t t = 0; t < k; ++t) xv[size_t(i * k + t)] *= float(1 + i % 5) * 10.0f;
    const std::vector<bf16> x = to_bf16(xv);
    rt.set_data(l.x, std::span<const bf16>(x));
    cpu.set_data(l.x, std::span<const bf16>(x));
    rt.execute({{"s", s}});
    cpu.execute({{"s", s}});
    EXPECT_EQ(counter(rt, "fp8_matmuls"), 1);
    const std::vector<float> got = rt.get_f32(l.y), ref = cpu.get_f32(l.y);
    expect_matches_emulation(got, emulate(x, w, b, s, n, k), "fp8 vs emulation");
    double diff = 0, scale = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      diff = std::max(diff, std::abs(double(got[i]) - double(ref[i])));
      scale = std::max(scale, std::abs(double(ref[i])));
    }
    EXPECT_GT(diff, 0.0) << "no fp8 rounding visible: did the GEMM run in bf16?";
    EXPECT_LE(diff, 0.05 * scale) << "fp8 far from bf16 (max |ref| " << scale << ")";
  }
  EXPECT_EQ(counter(rt, "fp8_weight_quantizations"), 1) << "the weight is constant: quantized once";
}

// A new upload of the weight (same size: same memory, no re-resolve) is requantized before the
// next run reads it; a stale fp8 copy would still match the old emulation.
TEST_F(CudaFp8, ReuploadedWeightIsRequantized) {
  const int64_t n = 128, k = 256, s = 96;
  Linear l(n, k);
  Executable rt(l.g, cuda::backend(fp8_options().cuda), fp8_options());
  const std::vector<bf16> b = to_bf16(gpu_test::spread(size_t(n), -0.2f, 0.2f, 5));
  const std::vector<bf16> x = to_bf16(gpu_test::spread(size_t(s * k), -1, 1, 6));
  rt.set_data(l.b, std::span<const bf16>(b));
  for (unsigned seed : {7u, 8u}) {
    const std::vector<bf16> w = to_bf16(gpu_test::spread(size_t(n * k), -0.1f, 0.1f, seed));
    rt.set_data(l.w, std::span<const bf16>(w));
    rt.set_data(l.x, std::span<const bf16>(x));
    rt.execute({{"s", s}});
    expect_matches_emulation(rt.get_f32(l.y), emulate(x, w, b, s, n, k), "after upload");
  }
  EXPECT_EQ(counter(rt, "fp8_weight_quantizations"), 2);
}

// k = 200 is no multiple of 16: cuBLASLt's fp8 GEMM cannot read it; the step stays bf16 (equal
// to the reference up to bf16 rounding), and says so in the stats.
TEST_F(CudaFp8, UnalignedShapeStaysBf16) {
  const int64_t n = 128, k = 200, s = 64;
  Linear l(n, k);
  Executable rt(l.g, cuda::backend(fp8_options().cuda), fp8_options());
  ReferenceRuntime cpu(l.g);
  const std::vector<bf16> w = to_bf16(gpu_test::spread(size_t(n * k), -0.1f, 0.1f, 9));
  const std::vector<bf16> b = to_bf16(gpu_test::spread(size_t(n), -0.2f, 0.2f, 10));
  const std::vector<bf16> x = to_bf16(gpu_test::spread(size_t(s * k), -1, 1, 11));
  run_all(l, {&rt, &cpu}, w, b, x, s);
  EXPECT_EQ(counter(rt, "fp8_matmuls"), 0);
  gpu_test::expect_all_near(rt.get_f32(l.y), cpu.get_f32(l.y), 2e-2, 2e-2, "bf16 fallback");
}

// The default (timed) mode keeps whichever of quantize + e4m3 GEMM and the bf16 GEMM ran faster
// at this shape, and its result is that choice's: the emulation's, or the reference's.
TEST_F(CudaFp8, TimedModeKeepsEitherAndIsRightWithIt) {
  const int64_t n = 1024, k = 1024, s = 2048;
  Linear l(n, k);
  test::GpuOptions o = fp8_options();
  o.cuda.fp8_timed = true;
  o.dim_hints = {{"s", s}};
  Executable rt(l.g, cuda::backend(o.cuda), o);
  ReferenceRuntime cpu(l.g);
  const std::vector<bf16> w = to_bf16(gpu_test::spread(size_t(n * k), -0.05f, 0.05f, 12));
  const std::vector<bf16> b = to_bf16(gpu_test::spread(size_t(n), -0.2f, 0.2f, 13));
  const std::vector<bf16> x = to_bf16(gpu_test::spread(size_t(s * k), -1, 1, 14));
  run_all(l, {&rt, &cpu}, w, b, x, s);
  const int64_t fp8 = counter(rt, "fp8_matmuls"), declined = counter(rt, "fp8_declined");
  ASSERT_EQ(fp8 + declined, 1) << "the one qualifying GEMM is either fp8 or declined";
  if (fp8 == 1)
    expect_matches_emulation(rt.get_f32(l.y), emulate(x, w, b, s, n, k), "timed: fp8");
  else
    gpu_test::expect_all_near(rt.get_f32(l.y), cpu.get_f32(l.y), 2e-2, 2e-2, "timed: bf16");
}

}  // namespace
}  // namespace luminal
