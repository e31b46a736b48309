// Decode-shaped matrix-vector products on the CUDA runtime: y_i = x @ W_i^T for L distinct bf16
// weights W_i [n, k] (L * n * k * 2 bytes, far above the 60 MB L2, so every call streams from
// DRAM), at m = 1 row. One plan per variant: the GEMV kernel (src/cuda/kernels/gemv.cuh) with its
// defaults or the cuda::GemvOptions loads / splits given on the command line, grouped by three per
// launch ("group"), and cuBLASLt (gemv.enabled = false). Time = CUDA events
// around execute() (execute_timed), median over --iters calls, divided by L. Prints a table;
// --json FILE writes it. Never asserts timings.
//   luminal_bench_gemv [--iters 30] [--variants default,cublaslt,loads=4,splits=2,...] [--json F]
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "luminal/compile.h"
#include "luminal/cuda.h"

namespace {

using namespace luminal;

struct Shape {
  const char* name;
  int64_t n, k, count;  // count products per call
};

// Llama-3.2-1B's decode projections (hidden 2048, 8 kv heads x 64, MLP 8192, vocab 128256).
const Shape kShapes[] = {{"q/o 2048x2048", 2048, 2048, 64},
                         {"k/v 512x2048", 512, 2048, 128},
                         {"gate/up 8192x2048", 8192, 2048, 16},
                         {"down 2048x8192", 2048, 8192, 16},
                         {"lm_head 128256x2048", 128256, 2048, 2}};

// "default", "cublaslt", "group", "loads=N", "splits=N", joined by '+': the GEMV options. Without
// "group" the products run one launch each (the runtime would merge them by three).
cuda::GemvOptions gemv_of(const std::string& variant) {
  cuda::GemvOptions g;
  g.group = false;
  std::stringstream ss(variant);
  for (std::string part; std::getline(ss, part, '+');) {
    if (part == "cublaslt") g.enabled = false;
    if (part == "group") g.group = true;
    if (part.rfind("loads=", 0) == 0) g.loads = std::stoi(part.substr(6));
    if (part.rfind("splits=", 0) == 0) g.splits = std::stoi(part.substr(7));
  }
  return g;
}

// Median device time per product (us) of the shape's plan with these GEMV options.
double time_shape(const Shape& s, const cuda::GemvOptions& gemv, int iters) {
  Graph g;
  GraphTensor x = g.named_tensor("x", {Expr::sym("s"), s.k}, DType::BF16).persist();
  std::vector<GraphTensor> ws;
  for (int64_t i = 0; i < s.count; ++i) {
    ws.push_back(g.named_tensor(fmt::format("w{}", i), {s.n, s.k}, DType::BF16).persist());
    x.matmul(ws.back().transpose(0, 1)).output();
  }
  cuda::CudaOptions cuda_opts;
  cuda_opts.gemv = gemv;
  CompileOptions opts;
  opts.dim_hints = {{"s", 16}};  // the Llama runtime's hint: every projection a matmul step
  opts.search.enabled = false;
  Executable rt(g, cuda::backend(cuda_opts), opts);
  std::vector<bf16> xv(size_t(s.k));
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = bf16(float(int(i % 13) - 6) / 8.0f);
  rt.set_data(x, std::span<const bf16>(xv));
  std::vector<bf16> wv(size_t(s.n * s.k));
  for (size_t i = 0; i < wv.size(); ++i) wv[i] = bf16(float(int(i % 7) - 3) / 16.0f);
  for (const GraphTensor& w : ws) rt.set_data(w, std::span<const bf16>(wv));
  rt.execute({{"s", 1}});  // compile, capture
  std::vector<double> us = rt.execute_timed({{"s", 1}}, iters);
  std::sort(us.begin(), us.end());
  return us[us.size() / 2] / double(s.count);
}

}  // namespace

int main(int argc, char** argv) {
  int iters = 30;
  std::string variants = "default,cublaslt", json_path;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--iters")
      iters = std::atoi(argv[i + 1]);
    else if (a == "--variants")
      variants = argv[i + 1];
    else if (a == "--json")
      json_path = argv[i + 1];
  }
  if (!cuda::available()) {
    fmt::print(stderr, "gemv_bench: no CUDA device\n");
    return 1;
  }
  nlohmann::json out = nlohmann::json::array();
  std::stringstream vs(variants);
  fmt::print("{:<22} {:<20} {:>9} {:>8}\n", "shape", "variant", "us", "TB/s");
  for (std::string v; std::getline(vs, v, ',');) {
    for (const Shape& s : kShapes) {
      try {
        const double us = time_shape(s, gemv_of(v), iters);
        const double tbs = double(s.n * s.k * 2) / (us * 1e-6) / 1e12;
        fmt::print("{:<22} {:<20} {:>9.2f} {:>8.2f}\n", s.name, v, us, tbs);
        out.push_back({{"shape", s.name}, {"variant", v}, {"us", us}, {"tb_per_s", tbs}});
      } catch (const std::exception& e) {
        fmt::print("{:<22} {:<20} error: {}\n", s.name, v, e.what());
      }
      std::fflush(stdout);
    }
  }
  if (!json_path.empty()) std::ofstream(json_path) << out.dump(1) << "\n";
  return 0;
}
