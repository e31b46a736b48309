// Issue 24: what packing constant weights once would give luminal's CPU matmuls. Times DLRM-v2's
// bf16 GEMMs (cross-layer V and W, the top MLP's first layer) on oneDNN with the weights as luminal
// passes them (nn.Linear's [n, k] row-major, read in place) and reordered once into the layout the
// primitive asks for (format_tag::any), as PyTorch's weight prepacking does.
//   cmake -S bench/cpu_gemm -B /tmp/gemm_build -G Ninja && cmake --build /tmp/gemm_build
//   OMP_NUM_THREADS=2 /tmp/gemm_build/onednn_prepack
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <tuple>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

using namespace dnnl;

int main() {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const auto bf16 = memory::data_type::bf16;
  for (auto [m, k, n] : {std::tuple<long, long, long>{2048, 3456, 512}, {2048, 512, 3456}, {2048, 3456, 1024}})
    for (int packed = 0; packed < 2; ++packed) {
      const memory::desc a({m, k}, bf16, memory::dims{k, 1}), c({m, n}, bf16, memory::dims{n, 1});
      const memory::desc w_plain({k, n}, bf16, memory::dims{1, k});  // [n, k] row-major
      const matmul::primitive_desc pd(
          matmul::desc(a, packed ? memory::desc({k, n}, bf16, memory::format_tag::any) : w_plain, c),
          primitive_attr(), eng);
      std::vector<uint16_t> av(size_t(m * k), 0x3f80), wv(size_t(k * n), 0x3c00), cv(size_t(m * n));
      memory am(a, eng, av.data()), wm(w_plain, eng, wv.data()), cm(c, eng, cv.data()), w = wm;
      if (packed && pd.weights_desc() != w_plain) {
        w = memory(pd.weights_desc(), eng);
        reorder(wm, w).execute(s, wm, w);
      }
      matmul p(pd);
      auto run = [&] { p.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, cm}}); };
      for (int i = 0; i < 5; ++i) run();
      s.wait();
      const int iters = 20;
      const auto t0 = std::chrono::steady_clock::now();
      for (int i = 0; i < iters; ++i) run();
      s.wait();
      const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / iters;
      std::printf("m %ld k %ld n %ld %-6s %8.0f us %6.0f GFLOP/s (%s)\n", m, k, n, packed ? "packed" : "plain", us,
                  2.0 * double(m * n * k) / us / 1e3, pd.impl_info_str());
    }
}
