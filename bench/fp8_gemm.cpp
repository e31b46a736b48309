// Which FP8 GEMM forms cuBLASLt runs on this GPU, how fast, and whether their scales mean what we
// think: bf16 vs e4m3 with per-tensor scales ("scalar") vs per-row activation x per-column weight
// scales ("outer", CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F), bf16 or e4m3 out, bias + ReLU fused,
// at the DLRM MLP shapes. y[m, n] = relu(x[m, k] @ w[n, k]^T + b): the row-major product as the
// column-major y^T = w @ x^T (w is cuBLASLt's A, "TN", as FP8 requires). Each form's result is
// checked against a double-precision product of the dequantized operands at sampled outputs.
// Time: CUDA events around 20 calls, best of 5 (us per call), the heuristic's fastest of 4.
//   luminal_bench_fp8 [--json FILE]
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(fmt::format("{}: {}", what, cudaGetErrorString(e)));
}
void check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS)
    throw std::runtime_error(fmt::format("{}: {}", what, cublasLtGetStatusName(s)));
}
#define CK(x) check((x), #x)

struct Shape {
  const char* name;
  int64_t m, n, k;
};

// MLPerf-v1 DLRM MLPs (k padded to 16 for FP8: 479 -> 480) and DLRM-v2's cross layer and top MLP.
const Shape kShapes[] = {
    {"v1 bot 512->256", 16384, 256, 512},   {"v1 top 480->1024", 16384, 1024, 480},
    {"v1 top 1024->1024", 16384, 1024, 1024}, {"v1 top 1024->512", 16384, 512, 1024},
    {"v1 top 512->256", 16384, 256, 512},   {"v1 top 1024->1024 b2048", 2048, 1024, 1024},
    {"v2 cross V 3456->512", 16384, 512, 3456}, {"v2 cross W 512->3456", 16384, 3456, 512},
    {"v2 top 3456->1024", 16384, 1024, 3456}, {"v2 top 1024->1024", 16384, 1024, 1024},
};

enum class Form { bf16, fp8_scalar, fp8_outer, fp8_outer_fp8out };
const char* form_name(Form f) {
  switch (f) {
    case Form::bf16: return "bf16";
    case Form::fp8_scalar: return "fp8 per-tensor";
    case Form::fp8_outer: return "fp8 row x col";
    case Form::fp8_outer_fp8out: return "fp8 row x col, e4m3 out";
  }
  return "?";
}

template <class T>
T* upload(const std::vector<T>& h) {
  T* d = nullptr;
  CK(cudaMalloc(&d, h.size() * sizeof(T)));
  CK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
  return d;
}

// Row-wise symmetric e4m3: scale = amax / 448 per row of a [rows, cols] matrix.
void quantize_rows(const std::vector<float>& x, int64_t rows, int64_t cols,
                   std::vector<__nv_fp8_e4m3>& q, std::vector<float>& scale) {
  q.resize(x.size());
  scale.resize(size_t(rows));
  for (int64_t r = 0; r < rows; ++r) {
    float amax = 0;
    for (int64_t c = 0; c < cols; ++c) amax = std::max(amax, std::fabs(x[size_t(r * cols + c)]));
    const float s = amax > 0 ? amax / 448.0f : 1.0f;
    scale[size_t(r)] = s;
    for (int64_t c = 0; c < cols; ++c) q[size_t(r * cols + c)] = __nv_fp8_e4m3(x[size_t(r * cols + c)] / s);
  }
}

struct Result {
  bool runs = false;
  double us = 0, max_err = 0, max_ref = 0;
  std::string why;
};

Result run_form(const Shape& s, Form f, cublasLtHandle_t h, void* ws, size_t ws_bytes) {
  std::mt19937 rng(7);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  std::vector<float> x(size_t(s.m * s.k)), w(size_t(s.n * s.k)), b(size_t(s.n));
  for (float& v : x) v = std::fabs(nd(rng));  // post-ReLU activations are non-negative
  for (float& v : w) v = nd(rng) / std::sqrt(float(s.k));
  for (float& v : b) v = 0.1f * nd(rng);
  const bool fp8 = f != Form::bf16;
  // The operands as the GPU sees them, and their exact values for the check.
  std::vector<float> xv(x.size()), wv(w.size()), xs(size_t(s.m), 1.0f), wsc(size_t(s.n), 1.0f);
  void *dx = nullptr, *dw = nullptr;
  float *dxs = nullptr, *dws = nullptr;
  if (!fp8) {
    std::vector<__nv_bfloat16> xb(x.size()), wb(w.size());
    for (size_t i = 0; i < x.size(); ++i) xv[i] = float(xb[i] = __float2bfloat16(x[i]));
    for (size_t i = 0; i < w.size(); ++i) wv[i] = float(wb[i] = __float2bfloat16(w[i]));
    dx = upload(xb);
    dw = upload(wb);
  } else {
    std::vector<__nv_fp8_e4m3> xq, wq;
    if (f == Form::fp8_scalar) {  // one scale per tensor
      quantize_rows(x, 1, s.m * s.k, xq, xs);
      quantize_rows(w, 1, s.n * s.k, wq, wsc);
      xs.assign(size_t(s.m), xs[0]);
      wsc.assign(size_t(s.n), wsc[0]);
    } else {
      quantize_rows(x, s.m, s.k, xq, xs);
      quantize_rows(w, s.n, s.k, wq, wsc);
    }
    for (size_t i = 0; i < x.size(); ++i) xv[i] = float(xq[i]) * xs[size_t(int64_t(i) / s.k)];
    for (size_t i = 0; i < w.size(); ++i) wv[i] = float(wq[i]) * wsc[size_t(int64_t(i) / s.k)];
    dx = upload(xq);
    dw = upload(wq);
    dxs = upload(xs);
    dws = upload(wsc);
  }
  std::vector<__nv_bfloat16> bb(b.size());
  for (size_t i = 0; i < b.size(); ++i) bb[i] = __float2bfloat16(b[i]);
  void* dbias = upload(bb);
  const bool fp8_out = f == Form::fp8_outer_fp8out;
  const size_t out_bytes = size_t(s.m * s.n) * (fp8_out ? 1 : 2);
  void* dy = nullptr;
  CK(cudaMalloc(&dy, out_bytes));
  CK(cudaMemset(dy, 0xFF, out_bytes));  // poison
  float out_scale = 1.0f;  // e4m3 out: y_q = y / out_scale (the next layer's activation scale)
  float* d_out_inv = nullptr;
  if (fp8_out) {
    out_scale = 4.0f / 448.0f;
    d_out_inv = upload(std::vector<float>{1.0f / out_scale});
  }

  const cudaDataType_t in_t = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  const cudaDataType_t out_t = fp8_out ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  cublasLtMatmulDesc_t desc = nullptr;
  CK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const int32_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  const uint32_t epi = CUBLASLT_EPILOGUE_RELU_BIAS;
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi));
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &dbias, sizeof dbias));
  const cudaDataType_t bias_t = CUDA_R_16BF;
  CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bias_t, sizeof bias_t));
  if (fp8) {
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &dws, sizeof dws));
    CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &dxs, sizeof dxs));
    if (f != Form::fp8_scalar) {
      const int32_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
      CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode, sizeof mode));
      CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode, sizeof mode));
    }
    if (fp8_out)
      CK(cublasLtMatmulDescSetAttribute(desc, CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, &d_out_inv,
                                        sizeof d_out_inv));
  }
  cublasLtMatrixLayout_t la, lb, lc, ld;
  CK(cublasLtMatrixLayoutCreate(&la, in_t, uint64_t(s.k), uint64_t(s.n), s.k));  // w^T stored: op T
  CK(cublasLtMatrixLayoutCreate(&lb, in_t, uint64_t(s.k), uint64_t(s.m), s.k));  // x^T
  // C must be bf16 when D is e4m3 (cuBLASLt's FP8 table); beta = 0 so C is never read.
  CK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, uint64_t(s.n), uint64_t(s.m), s.n));
  CK(cublasLtMatrixLayoutCreate(&ld, out_t, uint64_t(s.n), uint64_t(s.m), s.n));
  cublasLtMatmulPreference_t pref;
  CK(cublasLtMatmulPreferenceCreate(&pref));
  const uint64_t wsb = ws_bytes;
  CK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof wsb));
  cublasLtMatmulHeuristicResult_t res[4];
  int found = 0;
  Result r;
  const cublasStatus_t hs = cublasLtMatmulAlgoGetHeuristic(h, desc, la, lb, lc, ld, pref, 4, res, &found);
  void* dc = dy;  // never read (beta = 0) but must be a valid pointer of C's type
  if (fp8_out) CK(cudaMalloc(&dc, size_t(s.m * s.n) * 2));
  if (hs != CUBLAS_STATUS_SUCCESS || found == 0) {
    r.why = fmt::format("no algorithm ({})", cublasLtGetStatusName(hs));
  } else {
    const float alpha = 1.0f, beta = 0.0f;
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    double best = 1e30;
    int runnable = 0;
    for (int a = 0; a < found; ++a) {
      auto call = [&] {
        return cublasLtMatmul(h, desc, &alpha, dw, la, dx, lb, &beta, dc, lc, dy, ld, &res[a].algo,
                              ws, ws_bytes, nullptr);
      };
      if (call() != CUBLAS_STATUS_SUCCESS) continue;
      ++runnable;
      for (int t = 0; t < 5; ++t) {
        CK(cudaEventRecord(e0));
        for (int i = 0; i < 20; ++i) call();
        CK(cudaEventRecord(e1));
        CK(cudaEventSynchronize(e1));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        best = std::min(best, double(ms) * 1000.0 / 20.0);
      }
    }
    CK(cudaDeviceSynchronize());
    if (runnable == 0) {
      r.why = "heuristic's algorithms all failed to run";
    } else {
      r.runs = true;
      r.us = best;
      // The last run's output (every algorithm computes the same product) at sampled points.
      std::vector<unsigned char> y(out_bytes);
      CK(cudaMemcpy(y.data(), dy, out_bytes, cudaMemcpyDeviceToHost));
      std::mt19937 pick(11);
      for (int t = 0; t < 400; ++t) {
        const int64_t i = int64_t(pick() % uint64_t(s.m)), j = int64_t(pick() % uint64_t(s.n));
        double acc = double(float(bb[size_t(j)]));
        for (int64_t kk = 0; kk < s.k; ++kk)
          acc += double(xv[size_t(i * s.k + kk)]) * double(wv[size_t(j * s.k + kk)]);
        acc = std::max(acc, 0.0);
        double got;
        if (fp8_out) {
          __nv_fp8_e4m3 q;
          q.__x = y[size_t(i * s.n + j)];
          got = double(float(q)) * out_scale;
        } else {
          __nv_bfloat16 v;
          std::memcpy(&v, &y[size_t(i * s.n + j) * 2], 2);
          got = double(float(v));
        }
        r.max_err = std::max(r.max_err, std::fabs(got - acc));
        r.max_ref = std::max(r.max_ref, std::fabs(acc));
      }
    }
    cudaEventDestroy(e0);
    cudaEventDestroy(e1);
  }
  cublasLtMatmulPreferenceDestroy(pref);
  for (auto l : {la, lb, lc, ld}) cublasLtMatrixLayoutDestroy(l);
  cublasLtMatmulDescDestroy(desc);
  for (void* p : {dx, dw, static_cast<void*>(dxs), static_cast<void*>(dws), dbias, dy,
                  static_cast<void*>(d_out_inv)})
    if (p) cudaFree(p);
  if (dc != dy) cudaFree(dc);
  return r;
}

}  // namespace

int main(int argc, char** argv) {
  std::string json_path;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::string(argv[i]) == "--json") json_path = argv[i + 1];
  try {
    cudaDeviceProp prop{};
    CK(cudaGetDeviceProperties(&prop, 0));
    std::printf("%s (sm_%d%d), cuBLASLt %zu\n", prop.name, prop.major, prop.minor, cublasLtGetVersion());
    cublasLtHandle_t h;
    CK(cublasLtCreate(&h));
    const size_t ws_bytes = size_t{32} << 20;
    void* ws = nullptr;
    CK(cudaMalloc(&ws, ws_bytes));
    nlohmann::json rows = nlohmann::json::array();
    std::printf("%-26s %-26s %10s %8s %12s\n", "shape", "form", "us", "TFLOP/s", "max err/max");
    for (const Shape& s : kShapes) {
      for (Form f : {Form::bf16, Form::fp8_scalar, Form::fp8_outer, Form::fp8_outer_fp8out}) {
        Result r = run_form(s, f, h, ws, ws_bytes);
        const double tflops = r.runs ? 2.0 * double(s.m * s.n * s.k) / (r.us * 1e6) : 0;
        if (r.runs)
          std::printf("%-26s %-26s %10.2f %8.1f %12.2e\n", s.name, form_name(f), r.us, tflops,
                      r.max_err / std::max(r.max_ref, 1e-30));
        else
          std::printf("%-26s %-26s %s\n", s.name, form_name(f), r.why.c_str());
        rows.push_back({{"shape", s.name}, {"m", s.m}, {"n", s.n}, {"k", s.k},
                        {"form", form_name(f)}, {"runs", r.runs}, {"us", r.us}, {"tflops", tflops},
                        {"max_abs_err", r.max_err}, {"max_abs_ref", r.max_ref}, {"why", r.why}});
      }
    }
    if (!json_path.empty()) std::ofstream(json_path) << rows.dump(1) << "\n";
    cudaFree(ws);
    cublasLtDestroy(h);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "luminal_bench_fp8: %s\n", e.what());
    return 1;
  }
  return 0;
}
