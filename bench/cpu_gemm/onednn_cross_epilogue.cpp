// DLRM-v2's cross layer on the CPU: x_{l+1} = x0 * (u W^T + b) + x_l, the W GEMM (bf16, m 2048,
// k 512, n 3456, weights packed) with the elementwise tail in oneDNN post-ops, three ways:
//   plain        u W^T + b only (the GEMM's own time: the floor of any fused form)
//   mul + add    binary_mul(x0), binary_add(x_l): what src/cpu/host_cross_gemm.cpp runs today
//   mul + sum    binary_mul(x0), sum: dst holds x_l and is overwritten (needs the output in x_l's
//                buffer, which the lowering does not plan yet)
// Each form's best of 15 runs, then the three outputs compared (mul + sum must equal mul + add).
//   cmake -S bench/cpu_gemm -B /tmp/gemm_build -G Ninja && cmake --build /tmp/gemm_build
//   OMP_NUM_THREADS=2 /tmp/gemm_build/onednn_cross_epilogue
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <unordered_map>

#include <oneapi/dnnl/dnnl.hpp>

using namespace dnnl;
using dt = memory::data_type;
using tag = memory::format_tag;

namespace {

float bf16_value(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// A bf16 tensor of small, varied values (never all zeros: a wrong epilogue shows).
memory filled(const memory::desc& d, const engine& eng, int seed) {
  memory m(d, eng);
  auto* p = static_cast<uint16_t*>(m.get_data_handle());
  for (size_t i = 0; i < d.get_size() / 2; ++i) p[i] = uint16_t(0x3c00 + (i * 7 + size_t(seed) * 13) % 512);
  return m;
}

}  // namespace

int main() {
  engine eng(engine::kind::cpu, 0);
  stream s(eng);
  const memory::dim m = 2048, k = 512, n = 3456;
  const memory::desc src({m, k}, dt::bf16, tag::ab), wei({k, n}, dt::bf16, tag::ba), bias({1, n}, dt::bf16, tag::ab),
      dst({m, n}, dt::bf16, tag::ab), wei_any({k, n}, dt::bf16, tag::any);
  memory a = filled(src, eng, 1), w = filled(wei, eng, 2), b = filled(bias, eng, 3), x0 = filled(dst, eng, 4),
               xl = filled(dst, eng, 5);
  const char* names[] = {"plain", "mul + add", "mul + sum"};
  memory out[3] = {memory(dst, eng), memory(dst, eng), memory(dst, eng)};
  for (int form = 0; form < 3; ++form) {
    post_ops ops;
    if (form > 0) ops.append_binary(algorithm::binary_mul, dst);
    if (form == 1) ops.append_binary(algorithm::binary_add, dst);
    if (form == 2) ops.append_sum(1.f);
    primitive_attr attr;
    attr.set_post_ops(ops);
    matmul::primitive_desc pd(matmul::desc(src, wei_any, bias, dst), attr, eng);
    memory packed(pd.weights_desc(), eng);
    reorder(w, packed).execute(s, w, packed);
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC, a}, {DNNL_ARG_WEIGHTS, packed}, {DNNL_ARG_BIAS, b}, {DNNL_ARG_DST, out[form]}};
    if (form > 0) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1] = x0;
    if (form == 1) args[DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1] = xl;
    const matmul mm(pd);
    double best = 1e30;
    for (int r = 0; r < 15; ++r) {
      if (form == 2) std::memcpy(out[2].get_data_handle(), xl.get_data_handle(), dst.get_size());  // dst = x_l
      s.wait();
      const auto t0 = std::chrono::steady_clock::now();
      mm.execute(s, args);
      s.wait();
      best = std::min(best, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    }
    std::printf("%-10s %7.0f us  %6.0f GFLOP/s  (%s)\n", names[form], best, 2.0 * m * n * k / best * 1e-3,
                pd.impl_info_str());
  }
  const auto* add = static_cast<const uint16_t*>(out[1].get_data_handle());
  const auto* sum = static_cast<const uint16_t*>(out[2].get_data_handle());
  float worst = 0;
  for (size_t i = 0; i < dst.get_size() / 2; ++i) {
    const float x = bf16_value(add[i]), y = bf16_value(sum[i]);
    worst = std::max(worst, std::fabs(x - y) / std::max(1.f, std::fabs(x)));
  }
  std::printf("mul + sum vs mul + add: max relative difference %.3g (bf16 rounding: <= 2^-7)\n", worst);
  return worst <= 1.f / 128 ? 0 : 1;
}
