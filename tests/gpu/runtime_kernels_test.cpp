// Kernel-level behavior of the CUDA runtime: the device error flag, custom-op kernels, output
// poisoning, cuBLASLt matmuls.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>

#include <fmt/format.h>

#include "gpu/gpu_test_util.h"
#include "luminal/reference.h"
#include "luminal/cuda.h"
#include "luminal/custom_op.h"
#include "luminal/nn.h"
#include "gpu_options.h"
#include "luminal/compile.h"
#include "search_graphs.h"

namespace luminal {
namespace {

using gpu_test::CudaTest;
using gpu_test::expect_error;

class CudaKernels : public CudaTest {};

TEST_F(CudaKernels, OutOfRangeGatherIndexRaisesAtTheNextRead) {
  Graph g;
  GraphTensor table = g.named_tensor("table", {5, 3}).persist();
  GraphTensor idx = g.named_tensor("idx", {3}, DType::I32);
  GraphTensor out = table.gather(idx).output();
  Executable rt(g, cuda::backend());
  const std::vector<float> tv = gpu_test::spread(15, 1, 2);
  rt.set_data(table, std::span<const float>(tv));
  for (const std::vector<int32_t>& bad :
       {std::vector<int32_t>{0, 7, 2}, std::vector<int32_t>{-1, 0, 1}}) {
    rt.set_data(idx, std::span<const int32_t>(bad));
    rt.execute();
    expect_error([&] { rt.get_f32(out); },
                      {"[cuda]", "bad input", "out-of-range gather index"});
  }
  // The flag was reset: good indices work again.
  const std::vector<int32_t> good = {4, 0, 2};
  rt.set_data(idx, std::span<const int32_t>(good));
  rt.execute();
  const std::vector<float> got = rt.get_f32(out);
  std::vector<float> want;
  for (int32_t r : good)
    for (int c = 0; c < 3; ++c) want.push_back(tv[size_t(r * 3 + c)]);
  gpu_test::expect_all_near(got, want, 0, 0, "gathered rows");
}

/// out = 2 a + b, with test modes for the runtime's custom-op paths.
class TestOp final : public CustomOp {
 public:
  enum class Mode { Full, EvenOnly, FlagNegative, NoKernel };
  explicit TestOp(Mode m) : mode_(m) {}
  std::string name() const override { return "scale_add"; }
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& in) const override {
    (void)g;
    return in[0] * 2.0 + in[1];
  }
  std::optional<CustomKernel> cuda_kernel(const KernelRequest& r) const override {
    const std::vector<std::vector<int64_t>>& dims = r.dims;
    const std::vector<DType>& dtypes = r.dtypes;
    if (mode_ == Mode::NoKernel || dtypes.size() != 2 || dtypes[0] != DType::F32)
      return std::nullopt;
    int64_t n = 1;
    for (int64_t d : dims[0]) n *= d;
    CustomKernel k;
    k.entry = "scale_add_f32";
    k.source = fmt::format(
        R"(extern "C" __global__ void scale_add_f32(const void* a_, const void* b_, void* out_,
                                                       int* error) {{
  const float* a = static_cast<const float*>(a_);
  const float* b = static_cast<const float*>(b_);
  float* out = static_cast<float*>(out_);
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= {n}LL) return;
  if ({flag} && b[i] < 0.0f) atomicExch(error, 1);
  if ({even} && (i % 2) != 0) return;
  out[i] = 2.0f * a[i] + b[i];
}}
)",
        fmt::arg("n", n), fmt::arg("flag", mode_ == Mode::FlagNegative ? 1 : 0),
        fmt::arg("even", mode_ == Mode::EvenOnly ? 1 : 0));
    k.grid = {unsigned((n + 127) / 128), 1, 1};
    k.block = {128, 1, 1};
    return k;
  }

 private:
  Mode mode_;
};

struct CustomGraph {
  Graph g;
  GraphTensor a, b, out;
  explicit CustomGraph(TestOp::Mode m, int64_t n = 300) {
    a = g.named_tensor("a", {n});
    b = g.named_tensor("b", {n});
    out = custom_op(std::make_shared<TestOp>(m), {a, b}).output();
  }
  void set(Runtime& rt, const std::vector<float>& av, const std::vector<float>& bv) {
    rt.set_data(a, std::span<const float>(av));
    rt.set_data(b, std::span<const float>(bv));
  }
};

TEST_F(CudaKernels, CustomOpKernelRunsAndMatchesItsDecomposition) {
  CustomGraph cg(TestOp::Mode::Full);
  Executable rt(cg.g, cuda::backend());
  ReferenceRuntime cpu(cg.g);
  const std::vector<float> av = gpu_test::spread(300, -1, 1, 1),
                           bv = gpu_test::spread(300, 0.1f, 1, 2);
  std::vector<float> want(300);
  for (size_t i = 0; i < 300; ++i) want[i] = 2.0f * av[i] + bv[i];
  for (int rep = 0; rep < 2; ++rep) {  // first run eager, second the captured graph
    cg.set(rt, av, bv);
    rt.execute();
    gpu_test::expect_all_near(rt.get_f32(cg.out), want, 1e-6, 1e-6, "cuda");
  }
  cg.set(cpu, av, bv);
  cpu.execute();
  gpu_test::expect_all_near(cpu.get_f32(cg.out), want, 1e-6, 1e-6, "reference decomposition");
  const std::vector<std::string> ops = rt.host_ops();
  EXPECT_NE(std::find(ops.begin(), ops.end(), "custom scale_add"), ops.end());
}

TEST_F(CudaKernels, CustomOpKernelCanReportBadInput) {
  CustomGraph cg(TestOp::Mode::FlagNegative);
  Executable rt(cg.g, cuda::backend());
  std::vector<float> av = gpu_test::spread(300, -1, 1, 1), bv = gpu_test::spread(300, 0.1f, 1, 2);
  bv[123] = -1.0f;
  cg.set(rt, av, bv);
  rt.execute();
  expect_error([&] { rt.get_f32(cg.out); }, {"[cuda]", "bad input"});
}

TEST_F(CudaKernels, CustomOpWithoutKernelRunsItsDecomposition) {
  CustomGraph cg(TestOp::Mode::NoKernel);
  Executable rt(cg.g, cuda::backend());
  const std::vector<float> av = gpu_test::spread(300, -1, 1, 7),
                           bv = gpu_test::spread(300, -1, 1, 8);
  std::vector<float> want(300);
  for (size_t i = 0; i < 300; ++i) want[i] = 2.0f * av[i] + bv[i];
  for (int rep = 0; rep < 2; ++rep) {
    cg.set(rt, av, bv);
    rt.execute();
    gpu_test::expect_all_near(rt.get_f32(cg.out), want, 1e-6, 1e-6, "decomposition on CUDA");
  }
}

/// A custom op whose only decomposition is another custom op without a kernel: unsupported.
class NestedOp final : public CustomOp {
 public:
  std::string name() const override { return "nested"; }
  GraphTensor decompose(Graph& g, const std::vector<GraphTensor>& in) const override {
    (void)g;
    return custom_op(std::make_shared<TestOp>(TestOp::Mode::NoKernel), in);
  }
};

TEST_F(CudaKernels, NestedCustomDecompositionIsAClearError) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {8}), b = g.named_tensor("b", {8});
  custom_op(std::make_shared<NestedOp>(), {a, b}).output();
  Executable rt(g, cuda::backend());
  rt.set_data(a, std::span<const float>(gpu_test::spread(8, -1, 1)));
  rt.set_data(b, std::span<const float>(gpu_test::spread(8, -1, 1)));
  expect_error([&] { rt.execute(); }, {"[cuda]", "custom op nested", "another custom op"});
}

TEST_F(CudaKernels, PoisoningExposesElementsAKernelNeverWrote) {
  CustomGraph cg(TestOp::Mode::EvenOnly, 64);
  cuda::CudaOptions poison;
  poison.poison = true;
  Executable rt(cg.g, cuda::backend(poison));
  const std::vector<float> av = gpu_test::spread(64, -1, 1, 3), bv = gpu_test::spread(64, -1, 1, 4);
  for (int rep = 0; rep < 2; ++rep) {
    cg.set(rt, av, bv);
    rt.execute();
    const std::vector<float> got = rt.get_f32(cg.out);
    ASSERT_EQ(got.size(), 64u);
    for (size_t i = 0; i < 64; ++i) {
      if (i % 2 == 0) {
        EXPECT_EQ(got[i], 2.0f * av[i] + bv[i]) << i;
      } else {
        EXPECT_TRUE(std::isnan(got[i]))
            << "element " << i << " was never written but reads " << got[i];
      }
    }
  }
}

bool has_matmul(const Runtime& rt) {
  for (const std::string& op : rt.host_ops())
    if (op.rfind("cublasLt matmul", 0) == 0) return true;
  return false;
}

TEST_F(CudaKernels, LinearReluOnCublasLtMatchesReferenceAtSeveralBatches) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {Expr::sym("batch"), 64});
  nn::Linear fc(g, "fc", 64, 128);
  GraphTensor y = fc(x).relu().output();
  test::GpuOptions opts;
  opts.dim_hints = {
      {"batch", 1024}};  // without a hint a symbolic batch counts as 1: too small for cuBLASLt
  Executable rt(g, cuda::backend(opts.cuda), opts);
  ReferenceRuntime cpu(g);
  EXPECT_TRUE(has_matmul(rt)) << "expected a cuBLASLt step for a 1024x64->128 Linear";
  const std::vector<float> w = gpu_test::spread(128 * 64, -0.3f, 0.3f, 5),
                           bias = gpu_test::spread(128, -1, 1, 6);
  for (Runtime* r : {static_cast<Runtime*>(&rt), static_cast<Runtime*>(&cpu)}) {
    r->set_data(fc.weight, std::span<const float>(w));
    r->set_data(*fc.bias, std::span<const float>(bias));
  }
  for (int64_t batch : {512, 1024, 512, 513}) {
    const std::vector<float> xs = gpu_test::spread(size_t(batch) * 64, -1, 1, unsigned(batch));
    rt.set_data(x, std::span<const float>(xs));
    cpu.set_data(x, std::span<const float>(xs));
    rt.execute({{"batch", batch}});
    cpu.execute({{"batch", batch}});
    gpu_test::expect_all_near(rt.get_f32(y), cpu.get_f32(y), 1e-5, 1e-5,
                              "batch " + std::to_string(batch));
  }
}

TEST_F(CudaKernels, BatchedAndTransposedMatmulsMatchReference) {
  Graph g;
  GraphTensor a = g.named_tensor("a", {8, 128, 64});
  GraphTensor b = g.named_tensor("b", {8, 64, 96});
  GraphTensor bt = g.named_tensor("bt", {8, 96, 64});
  GraphTensor c1 = a.matmul(b).output();
  GraphTensor c2 = a.matmul(bt.transpose(1, 2)).output();
  Executable rt(g, cuda::backend());
  ReferenceRuntime cpu(g);
  const std::vector<float> av = gpu_test::spread(8 * 128 * 64, -1, 1, 1),
                           bv = gpu_test::spread(8 * 64 * 96, -1, 1, 2),
                           btv = gpu_test::spread(8 * 96 * 64, -1, 1, 3);
  for (Runtime* r : {static_cast<Runtime*>(&rt), static_cast<Runtime*>(&cpu)}) {
    r->set_data(a, std::span<const float>(av));
    r->set_data(b, std::span<const float>(bv));
    r->set_data(bt, std::span<const float>(btv));
    r->execute();
  }
  gpu_test::expect_all_near(rt.get_f32(c1), cpu.get_f32(c1), 1e-5, 1e-5, "a @ b");
  gpu_test::expect_all_near(rt.get_f32(c2), cpu.get_f32(c2), 1e-5, 1e-5, "a @ bt^T");
  EXPECT_TRUE(has_matmul(rt)) << "expected cuBLASLt steps for 8x128x96x64 matmuls";
}


// Split-K (the search's splitk@ choice, offered for k >= 2048): each slice count, forced as the
// candidate, matches the reference at a small batch (few output tiles: the case it is for) and a
// larger one, in fp32 and bf16 (the latter against a reference on bf16-rounded inputs).
TEST_F(CudaKernels, SplitKMatmulsMatchReference) {
  for (DType dt : {DType::F32, DType::BF16}) {
    Graph g;
    GraphTensor x = g.named_tensor("x", {Expr::sym("batch"), 3456}, dt);
    nn::Linear fc(g, "fc", 3456, 64, true, dt);  // k >= 2048 offers split-K; a narrow n keeps the CPU reference quick
    GraphTensor y = fc(x).output();
    std::string key;
    for (const auto& p : test::all_lowering_points(g))
      if (p.key.rfind("splitk@", 0) == 0) key = p.key;
    ASSERT_FALSE(key.empty()) << "no split-K choice for a 3456 -> 64 Linear";
    // Values bf16-exact, so that one set of floats fits both dtypes; set as the tensors' dtype.
    auto rounded = [](std::vector<float> v) {
      for (float& e : v) e = float(bf16(e));
      return v;
    };
    auto set = [dt](Runtime& rt, const GraphTensor& t, const std::vector<float>& v) {
      if (dt == DType::F32) return rt.set_data(t, std::span<const float>(v));
      const std::vector<bf16> h(v.begin(), v.end());
      rt.set_data(t, std::span<const bf16>(h));
    };
    // The reference once per batch (the CPU reference is slow at these sizes).
    const std::vector<float> w = rounded(gpu_test::spread(64 * 3456, -0.05f, 0.05f, 7)),
                             bias = rounded(gpu_test::spread(64, -1, 1, 8));
    ReferenceRuntime cpu(g);
    set(cpu, fc.weight, w);
    set(cpu, *fc.bias, bias);
    std::map<int64_t, std::pair<std::vector<float>, std::vector<float>>> cases;  // batch: x, y
    for (int64_t batch : {270, 1030}) {
      std::vector<float> xs = rounded(gpu_test::spread(size_t(batch) * 3456, -1, 1, unsigned(batch)));
      set(cpu, x, xs);
      cpu.execute({{"batch", batch}});
      cases[batch] = {std::move(xs), cpu.get_f32(y)};
    }
    for (const char* slices : {"4", "8"}) {
      test::GpuOptions opts;
      opts.candidate = key + "=" + slices;
      opts.dim_hints = {{"batch", 270}};
      opts.cuda.poison = true;
      Executable rt(g, cuda::backend(opts.cuda), opts);
      set(rt, fc.weight, w);
      set(rt, *fc.bias, bias);
      for (const auto& [batch, xy] : cases) {
        set(rt, x, xy.first);
        rt.execute({{"batch", batch}});
        const bool f32 = dt == DType::F32;
        gpu_test::expect_all_near(rt.get_f32(y), xy.second, f32 ? 1e-4 : 3e-2, f32 ? 1e-4 : 2e-2,
                                  fmt::format("{} split-k {} batch {}", dtype_name(dt), slices, batch));
      }
      EXPECT_NE(rt.search_report().candidate.find(key + "=" + slices), std::string::npos)
          << rt.search_report().candidate;
    }
  }
}

}  // namespace
}  // namespace luminal
