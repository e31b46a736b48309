// Issue 24: times the DLRM MLP layers y = relu(x W^T + b) through one CPU GEMM library per binary
// (oneDNN, OpenBLAS, BLIS). One source, one executable per library (-DUSE_DNNL / -DUSE_OPENBLAS /
// -DUSE_BLIS): OpenBLAS and BLIS both export cblas_sgemm, so linking them into one binary would
// silently time whichever the loader resolves first.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <unordered_map>
#include <vector>

#if defined(USE_DNNL)
#include <omp.h>
#include <oneapi/dnnl/dnnl.hpp>
#elif defined(USE_OPENBLAS)
#include <cblas.h>
#elif defined(USE_BLIS)
#include <blis.h>
#else
#error "define USE_DNNL, USE_OPENBLAS or USE_BLIS"
#endif

using Clock = std::chrono::steady_clock;
static double secs(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

/// 64-byte aligned heap buffer, so every library gets operands aligned the same way.
template <class T>
struct Buf {
  T* p = nullptr;
  explicit Buf(size_t n)
      : p(static_cast<T*>(std::aligned_alloc(64, (n * sizeof(T) + 63) / 64 * 64))) {}
  Buf(Buf&& o) noexcept : p(o.p) { o.p = nullptr; }
  ~Buf() { std::free(p); }
};

/// fp32 -> bf16 rounding to nearest even, as oneDNN's reorder does, so the reference sees the same.
static uint16_t to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return uint16_t((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}
static float from_bf16(uint16_t h) {
  uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

/// Naive y = relu(x W^T + b) in double: the yardstick every library's output is checked against.
static void ref_layer(const float* x, const float* W, const float* b, float* y, int M, int K,
                      int N) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      double acc = b[n];
      for (int k = 0; k < K; ++k) acc += double(x[size_t(m) * K + k]) * W[size_t(n) * K + k];
      y[size_t(m) * N + n] = float(std::max(acc, 0.0));
    }
}

/// Largest |a - ref| folded into m; NaN if any output is NaN (unwritten elements keep the poison).
static double max_diff(const float* a, const std::vector<float>& ref, double m = 0) {
  for (size_t i = 0; i < ref.size(); ++i) {
    if (std::isnan(a[i])) return NAN;
    m = std::max(m, std::fabs(double(a[i]) - ref[i]));
  }
  return m;
}

/// Median seconds per call, timed in batches of >= 20 us so clock cost can't swamp 100 ns GEMMs.
template <class F>
static double median_time(F&& fn, double budget_s) {
  // Warm-up: first-touch of packing buffers, thread pool start, caches.
  for (auto t0 = Clock::now(); secs(t0) < budget_s * 0.25;) fn();
  int reps = 1;
  for (auto t0 = Clock::now();; t0 = Clock::now(), reps *= 2) {
    for (int i = 0; i < reps; ++i) fn();
    if (secs(t0) >= 20e-6 || reps >= (1 << 16)) break;
  }
  std::vector<double> s;
  for (auto start = Clock::now(); (s.size() < 15 || secs(start) < budget_s) && s.size() < 2000;) {
    auto t0 = Clock::now();
    for (int i = 0; i < reps; ++i) fn();
    s.push_back(secs(t0) / reps);
  }
  std::nth_element(s.begin(), s.begin() + s.size() / 2, s.end());
  return s[s.size() / 2];
}

/// One layer bound to its buffers: run() writes relu(x W^T + b); create/pack are one-off costs.
struct Step {
  std::function<void()> run;
  double create_us = NAN, pack_us = NAN;
  std::string impl;
};
/// Microseconds as a table cell; "-" where the library has no such step (BLAS: create, pack).
static std::string us(double v) { return std::isnan(v) ? "-" : std::to_string(std::lround(v)); }

#if defined(USE_DNNL)
static const char* kLib = "oneDNN";
static dnnl::engine g_eng(dnnl::engine::kind::cpu, 0);
static dnnl::stream g_strm(g_eng);
static void set_threads(int t) { omp_set_num_threads(t); }  // Debian's libdnnl2 is the OpenMP build
/// Name of the ISA oneDNN dispatches to: avx512_core_bf16 = native bf16 dot products, *_amx = AMX.
static const char* isa_name(dnnl::cpu_isa i) {
  using I = dnnl::cpu_isa;
  const std::pair<I, const char*> names[] = {{I::avx2, "avx2"},
                                             {I::avx2_vnni, "avx2_vnni"},
                                             {I::avx512_core, "avx512_core"},
                                             {I::avx512_core_vnni, "avx512_core_vnni"},
                                             {I::avx512_core_bf16, "avx512_core_bf16"},
                                             {I::avx512_core_amx, "avx512_core_amx"}};
  for (auto& [isa, name] : names)
    if (isa == i) return name;
  return "other";
}
/// Matmul primitive with bias + ReLU fused; weights reordered once into the primitive's layout.
static Step make_step(bool bf_in, bool bf_out, int M, int K, int N, void* x, const float* W,
                      const float* b, void* y) {
  using dt = dnnl::memory::data_type;
  using tag = dnnl::memory::format_tag;
  using md = dnnl::memory::desc;
  const dt tin = bf_in ? dt::bf16 : dt::f32;
  md src({M, K}, tin, tag::ab), wany({K, N}, tin, tag::any), bias({1, N}, dt::f32, tag::ab);
  md dst({M, N}, bf_out ? dt::bf16 : dt::f32, tag::ab);
  dnnl::post_ops po;
#if DNNL_VERSION_MAJOR >= 3
  po.append_eltwise(dnnl::algorithm::eltwise_relu, 0.f, 0.f);
#else
  po.append_eltwise(1.f, dnnl::algorithm::eltwise_relu, 0.f, 0.f);
#endif
  dnnl::primitive_attr attr;
  attr.set_post_ops(po);
  Step s;
  auto t0 = Clock::now();
#if DNNL_VERSION_MAJOR >= 3
  dnnl::matmul::primitive_desc pd(g_eng, src, wany, bias, dst, attr);
#else
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wany, bias, dst), attr, g_eng);
#endif
  dnnl::matmul prim(pd);
  s.create_us = secs(t0) * 1e6;
  s.impl = pd.impl_info_str();
  // User weights are W[N][K], i.e. K x N in "ba" order; a backend would reorder at load time.
  std::vector<uint16_t> wbf(bf_in ? size_t(K) * N : 0);
  for (size_t i = 0; i < wbf.size(); ++i) wbf[i] = to_bf16(W[i]);
  dnnl::memory wuser(md({K, N}, tin, tag::ba), g_eng, bf_in ? (void*)wbf.data() : (void*)W),
      wpacked(pd.weights_desc(), g_eng);
  t0 = Clock::now();
  dnnl::reorder(wuser, wpacked).execute(g_strm, wuser, wpacked);
  g_strm.wait();
  s.pack_us = secs(t0) * 1e6;
  std::unordered_map<int, dnnl::memory> args{{DNNL_ARG_SRC, dnnl::memory(src, g_eng, x)},
                                             {DNNL_ARG_WEIGHTS, wpacked},
                                             {DNNL_ARG_BIAS, dnnl::memory(bias, g_eng, (void*)b)},
                                             {DNNL_ARG_DST, dnnl::memory(dst, g_eng, y)}};
  // The args map is built once here, not per call, as a backend holding its plan would.
  s.run = [prim, args] {
    prim.execute(g_strm, args);
    g_strm.wait();
  };
  return s;
}
#else
/// The epilogue a BLAS backend must add itself: one more pass over y (single-threaded here).
static void bias_relu(float* y, const float* b, int M, int N) {
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) y[size_t(m) * N + n] = std::max(y[size_t(m) * N + n] + b[n], 0.f);
}
#if defined(USE_OPENBLAS)
static const char* kLib = "OpenBLAS";
static void set_threads(int t) { openblas_set_num_threads(t); }
#else
static const char* kLib = "BLIS";
static void set_threads(int t) { bli_thread_set_num_threads(t); }
#endif
/// sgemm (W^T by the transpose flag, so W is never copied), then bias + ReLU; fp32 only.
static Step make_step(bool, bool, int M, int K, int N, void* xv, const float* W, const float* b,
                      void* yv) {
  Step s;
  auto x = static_cast<float*>(xv), y = static_cast<float*>(yv);
#if defined(USE_OPENBLAS)
  s.impl = openblas_get_corename();
  s.run = [=] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.f, x, K, W, K, 0.f, y, N);
    bias_relu(y, b, M, N);
  };
#else
  s.impl = bli_arch_string(bli_arch_query_id());
  // Native typed API (not BLIS's cblas shim): W is N x K with row stride K, read transposed.
  s.run = [=] {
    float one = 1.f, zero = 0.f;
    bli_sgemm(BLIS_NO_TRANSPOSE, BLIS_TRANSPOSE, M, N, K, &one, x, K, 1, const_cast<float*>(W), K,
              1, &zero, y, N, 1);
    bias_relu(y, b, M, N);
  };
#endif
  return s;
}
#endif

struct Layer {
  int K, N;
  std::vector<float> W, b;
};
using Mlp = std::vector<Layer>;
struct Model {
  const char* name;
  std::vector<Mlp> mlps;
};
static const int kBatches[] = {1, 64, 2048}, kThreads[] = {1, 2};
static int g_fails = 0;
static std::mt19937 g_rng(24);
static std::vector<float> rnd(size_t n, float scale) {
  std::uniform_real_distribution<float> d(-scale, scale);
  std::vector<float> v(n);
  for (auto& e : v) e = d(g_rng);
  return v;
}
/// Weights scaled by 1/sqrt(K) so activations stay O(1) down a chain and abs diffs stay comparable.
static Mlp make_mlp(std::vector<int> w) {
  Mlp m;
  for (size_t i = 0; i + 1 < w.size(); ++i)
    m.push_back({w[i], w[i + 1], rnd(size_t(w[i]) * w[i + 1], 1.f / std::sqrt(float(w[i]))),
                 rnd(w[i + 1], 0.5f)});
  return m;
}
/// Activation buffer in fp32 or bf16; poison() writes NaN so unwritten outputs fail the check.
struct Act {
  Buf<float> mem;
  size_t n;
  bool bf;
  Act(size_t n_, bool bf_) : mem(n_), n(n_), bf(bf_) {}
  uint16_t* h() { return reinterpret_cast<uint16_t*>(mem.p); }
  void poison() {
    if (bf)
      std::fill_n(h(), n, uint16_t(0x7fc0));
    else
      std::fill_n(mem.p, n, NAN);
  }
  void fill(const std::vector<float>& v) {
    if (bf)
      std::transform(v.begin(), v.end(), h(), to_bf16);
    else
      std::copy(v.begin(), v.end(), mem.p);
  }
};
/// Counts a failed check and returns the table cell's suffix.
static const char* verdict(double diff, double tol) {
  bool ok = diff <= tol;  // false for NaN
  g_fails += !ok;
  return ok ? "" : " FAIL";
}

/// Every distinct layer shape, alone: checked once on poisoned output, then timed.
static void bench_layers(const std::vector<Model>& models, bool bf, double budget) {
  for (int M : kBatches) {
    std::vector<std::pair<int, int>> seen;  // 512->256 is in both DLRM MLPs; time it once
    for (auto& model : models)
      for (auto& mlp : model.mlps)
        for (auto& L : mlp) {
          if (std::find(seen.begin(), seen.end(), std::pair{L.K, L.N}) != seen.end()) continue;
          seen.push_back({L.K, L.N});
          // bf16 is checked against a reference fed the same bf16-rounded x and W, so the diff
          // measures the accumulation (fp32 expected), not the input rounding.
          auto xv = rnd(size_t(M) * L.K, 1.f), W = L.W;
          for (auto* v : {&xv, &W})
            for (auto& e : *v) e = bf ? from_bf16(to_bf16(e)) : e;
          std::vector<float> ref(size_t(M) * L.N);
          ref_layer(xv.data(), W.data(), L.b.data(), ref.data(), M, L.K, L.N);
          Act x(size_t(M) * L.K, bf), y(size_t(M) * L.N, false);
          x.fill(xv);
          for (int t : kThreads) {
            set_threads(t);  // before creating too: oneDNN may plan its work split there
            Step s = make_step(bf, false, M, L.K, L.N, x.mem.p, L.W.data(), L.b.data(), y.mem.p);
            y.poison();
            s.run();
            double d = max_diff(y.mem.p, ref), tm = median_time(s.run, budget);
            std::printf("| %s | %s | %d | %d | %d->%d | %s | %s | %s | %.2f | %.1f | %.1e%s |\n",
                        kLib, bf ? "bf16" : "fp32", t, M, L.K, L.N, s.impl.c_str(),
                        us(s.create_us).c_str(), us(s.pack_us).c_str(), tm * 1e6,
                        2.0 * M * L.K * L.N / tm * 1e-9, d, verdict(d, 1e-3));
            std::fflush(stdout);
          }
        }
  }
}

/// Each model's bottom then top MLP back to back (the top input is random: DLRM's feature
/// interaction between them is not a GEMM); bf16 keeps bf16 activations between layers.
static void bench_chains(const std::vector<Model>& models, bool bf, double budget) {
  for (auto& model : models)
    for (int M : kBatches) {
      std::vector<Act> acts;  // per MLP: its input, then one output per layer
      std::vector<std::vector<float>> refs;
      std::vector<size_t> ins, outs;
      double flop = 0;
      for (auto& mlp : model.mlps) {  // fp32 reference chain on the unrounded input
        auto xv = rnd(size_t(M) * mlp[0].K, 1.f);
        ins.push_back(acts.size());
        acts.emplace_back(xv.size(), bf).fill(xv);
        for (size_t i = 0; i < mlp.size(); ++i) {
          std::vector<float> yv(size_t(M) * mlp[i].N);
          ref_layer(xv.data(), mlp[i].W.data(), mlp[i].b.data(), yv.data(), M, mlp[i].K, mlp[i].N);
          acts.emplace_back(yv.size(), bf && i + 1 < mlp.size());
          xv = std::move(yv);
          flop += 2.0 * M * mlp[i].K * mlp[i].N;
        }
        refs.push_back(xv);
        outs.push_back(acts.size() - 1);
      }
      for (int t : kThreads) {
        set_threads(t);
        std::vector<Step> steps;
        double create = 0;
        size_t a = 0;
        for (auto& mlp : model.mlps) {
          for (size_t i = 0; i < mlp.size(); ++i, ++a) {
            steps.push_back(make_step(bf, acts[a + 1].bf, M, mlp[i].K, mlp[i].N, acts[a].mem.p,
                                      mlp[i].W.data(), mlp[i].b.data(), acts[a + 1].mem.p));
            create += steps.back().create_us + steps.back().pack_us;
          }
          ++a;  // skip the next MLP's input buffer
        }
        auto chain = [&] {
          for (auto& s : steps) s.run();
        };
        for (size_t i = 0; i < acts.size(); ++i)
          if (std::find(ins.begin(), ins.end(), i) == ins.end()) acts[i].poison();
        chain();
        double d = 0;
        for (size_t j = 0; j < outs.size(); ++j) d = max_diff(acts[outs[j]].mem.p, refs[j], d);
        double tm = median_time(chain, budget);
        std::printf("| %s | %s | %d | %s | %d | %s | %.2f | %.1f | %.1e%s |\n", kLib,
                    bf ? "bf16" : "fp32", t, model.name, M, us(create).c_str(), tm * 1e6,
                    flop / tm * 1e-9, d, verdict(d, bf ? 0.1 : 1e-3));
        std::fflush(stdout);
      }
    }
}

/// gemm_<lib> [ms per case, default 60]; exits with the number of failed checks.
int main(int argc, char** argv) {
  const double budget = (argc > 1 ? std::atof(argv[1]) : 60.0) / 1e3;
  const std::vector<Model> models{
      {"dlrm-kaggle", {make_mlp({13, 512, 256, 64, 16}), make_mlp({367, 512, 256, 1})}},
      {"tiny", {make_mlp({13, 8, 4}), make_mlp({10, 8, 1})}}};
  std::vector<bool> dtypes{false};
#if defined(USE_DNNL)
  auto v = dnnl_version();
  std::printf("# oneDNN %d.%d.%d, effective ISA %s\n", v->major, v->minor, v->patch,
              isa_name(dnnl::get_effective_cpu_isa()));
  dnnl::set_primitive_cache_capacity(0);  // so every create is cold, not a hit on an earlier shape
  try {  // bf16 only where this build and CPU have a bf16 matmul; else creation throws
    Act px(64, true), py(64, false);
    std::vector<float> pw(64), pb(8);
    Step probe = make_step(true, false, 8, 8, 8, px.mem.p, pw.data(), pb.data(), py.mem.p);
    std::printf("# bf16 matmul: %s\n", probe.impl.c_str());
    dtypes.push_back(true);
  } catch (const std::exception& e) {
    std::printf("# bf16 matmul unavailable: %s\n", e.what());
  }
#elif defined(USE_OPENBLAS)
  std::printf("# OpenBLAS %s core %s\n", openblas_get_config(), openblas_get_corename());
#else
  std::printf("# BLIS %s arch %s\n", bli_info_get_version_str(),
              bli_arch_string(bli_arch_query_id()));
#endif
  std::printf(
      "\n| lib | dtype | thr | M | K->N | impl | create us | pack us | median us | GFLOP/s "
      "| max abs diff |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
  for (bool bf : dtypes) bench_layers(models, bf, budget);
  std::printf(
      "\n| lib | dtype | thr | model | M | create+pack us | chain us | GFLOP/s "
      "| max abs diff vs fp32 ref |\n|---|---|---|---|---|---|---|---|---|\n");
  for (bool bf : dtypes) bench_chains(models, bf, budget);
  return g_fails;
}
