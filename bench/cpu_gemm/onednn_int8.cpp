// Issue 24: what int8 GEMMs would give the CPU backend, and what oneDNN offers for them. Prints the
// implementation oneDNN picks for an s8/u8 x s8 matmul per destination type and output-scale kind
// (none, one runtime value, one runtime value per column, static values per column), then times DLRM-v2's GEMM shapes at bf16 (bf16 out)
// against int8 (s8 x s8 -> s32, no scales: the fastest form AMX-int8 runs here), weights packed.
//   cmake -S bench/cpu_gemm -B /tmp/gemm_build -G Ninja && cmake --build /tmp/gemm_build
//   OMP_NUM_THREADS=2 /tmp/gemm_build/onednn_int8
#include <chrono>
#include <cstdio>
#include <cstring>
#include <tuple>
#include <vector>

#include <oneapi/dnnl/dnnl.hpp>

using namespace dnnl;
using dt = memory::data_type;

namespace {

const char* name(dt t) {
  switch (t) {
    case dt::f32: return "f32";
    case dt::bf16: return "bf16";
    case dt::s32: return "s32";
    case dt::s8: return "s8";
    case dt::u8: return "u8";
    default: return "?";
  }
}

// Mean of 10 calls after 3 warm-ups, the weights reordered once into the layout the primitive asks for.
double time_us(engine& eng, stream& s, long m, long k, long n, dt src, dt wei, dt dst) {
  const memory::desc a({m, k}, src, memory::dims{k, 1}), c({m, n}, dst, memory::dims{n, 1});
  const memory::desc w_plain({k, n}, wei, memory::dims{1, k});  // nn.Linear's [n, k]
  const matmul::primitive_desc pd(matmul::desc(a, memory::desc({k, n}, wei, memory::format_tag::any), c),
                                  primitive_attr(), eng);
  memory am(a, eng), wm(w_plain, eng), w(pd.weights_desc(), eng), cm(c, eng);
  std::memset(am.get_data_handle(), 1, a.get_size());
  std::memset(wm.get_data_handle(), 1, w_plain.get_size());
  reorder(wm, w).execute(s, wm, w);
  matmul p(pd);
  auto run = [&] {
    p.execute(s, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, w}, {DNNL_ARG_DST, cm}});
    s.wait();
  };
  for (int i = 0; i < 3; ++i) run();
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 10; ++i) run();
  const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / 10;
  std::printf("  m %ld k %ld n %ld %s x %s -> %s: %8.0f us %6.0f G(FL)OP/s (%s)\n", m, k, n, name(src), name(wei),
              name(dst), us, 2.0 * double(m * n * k) / us / 1e3, pd.impl_info_str());
  return us;
}

}  // namespace

int main() {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  std::printf("oneDNN %d.%d.%d: implementation per int8 matmul form (m 2048 k 512 n 256)\n", dnnl_version()->major,
              dnnl_version()->minor, dnnl_version()->patch);
  const char* scale_kinds[] = {"no output scales", "one runtime scale", "runtime scale per column",
                               "static scale per column (values fixed at creation)"};
  for (dt src : {dt::s8, dt::u8})
    for (dt dst : {dt::s32, dt::f32, dt::bf16})
      for (int scales = 0; scales < 4; ++scales) {
        const memory::desc a({2048, 512}, src, memory::dims{512, 1}), c({2048, 256}, dst, memory::dims{256, 1});
        primitive_attr attr;
        if (scales == 1 || scales == 2) attr.set_output_scales(scales == 2 ? 1 << 1 : 0, {DNNL_RUNTIME_F32_VAL});
        if (scales == 3) attr.set_output_scales(1 << 1, std::vector<float>(256, 0.01f));
        std::string impl = "none";
        try {
          impl = matmul::primitive_desc(
                     matmul::desc(a, memory::desc({512, 256}, dt::s8, memory::format_tag::any), c), attr, eng)
                     .impl_info_str();
        } catch (const dnnl::error&) {
        }
        std::printf("  %s x s8 -> %s, %s: %s\n", name(src), name(dst), scale_kinds[scales], impl.c_str());
      }
  std::printf("DLRM-v2 GEMM shapes, bf16 vs int8\n");
  for (auto [m, k, n] : {std::tuple<long, long, long>{2048, 3456, 512}, {2048, 512, 3456}, {2048, 3456, 1024},
                         {2048, 1024, 1024}}) {
    const double b = time_us(eng, s, m, k, n, dt::bf16, dt::bf16, dt::bf16);
    const double i = time_us(eng, s, m, k, n, dt::s8, dt::s8, dt::s32);
    std::printf("  -> int8 %.2fx faster\n", b / i);
  }
}
