#include "cpu/host_cross_gemm.h"

#include <memory>
#include <string>
#include <unordered_map>

#include "cpu/onednn.h"

namespace luminal::cpu {

namespace {

// One primitive and its memory handles (data pointers set per run).
struct Primitive {
  dnnl::matmul prim;
  dnnl::memory src, wei, bias, dst, x0, xl;
  std::unordered_map<int, dnnl::memory> args;
};

}  // namespace

std::optional<HostKernel> cross_gemm_host_kernel(const custom::CrossGemm& op,
                                                 const std::vector<std::vector<int64_t>>& dims, DType dtype) {
  const custom::CrossGemmShape& s = op.shape();
  if (dims.size() != 5 || dims[0].size() != 2 || dtype != s.dtype) return std::nullopt;
  const dnnl::memory::data_type dt = *onednn_type(dtype);  // CrossGemmShape::validate: F32, F16 or BF16
  const int64_t m = dims[0][0], n = s.n, k = s.k;
  if (m < 1) return std::nullopt;
  using md = dnnl::memory::desc;
  using tags = dnnl::memory::dims;
  auto p = std::make_shared<Primitive>();
  try {
    const md src({m, k}, dt, tags{k, 1}), wei({k, n}, dt, tags{1, k}), bias({1, n}, dt, tags{n, 1}),
        dst({m, n}, dt, tags{n, 1});
    dnnl::post_ops ops;
    ops.append_binary(dnnl::algorithm::binary_mul, dst);
    ops.append_binary(dnnl::algorithm::binary_add, dst);
    dnnl::primitive_attr attr;
    attr.set_post_ops(ops);
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, bias, dst), attr, onednn_engine());
    // oneDNN's reference kernel (no JIT for this dtype here) is slower than the decomposition.
    if (std::string(pd.impl_info_str()).find("ref") != std::string::npos) return std::nullopt;
    p->prim = dnnl::matmul(pd);
    p->src = dnnl::memory(src, onednn_engine(), nullptr);
    p->wei = dnnl::memory(wei, onednn_engine(), nullptr);
    p->bias = dnnl::memory(bias, onednn_engine(), nullptr);
    p->dst = dnnl::memory(dst, onednn_engine(), nullptr);
    p->x0 = dnnl::memory(dst, onednn_engine(), nullptr);
    p->xl = dnnl::memory(dst, onednn_engine(), nullptr);
  } catch (const dnnl::error&) {
    return std::nullopt;
  }
  p->args = {{DNNL_ARG_SRC, p->src},
             {DNNL_ARG_WEIGHTS, p->wei},
             {DNNL_ARG_BIAS, p->bias},
             {DNNL_ARG_DST, p->dst},
             {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, p->x0},
             {DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, p->xl}};
  return HostKernel([p](const HostKernelArgs& a) {
    p->src.set_data_handle(const_cast<void*>(a.inputs[0]));
    p->wei.set_data_handle(const_cast<void*>(a.inputs[1]));
    p->bias.set_data_handle(const_cast<void*>(a.inputs[2]));
    p->x0.set_data_handle(const_cast<void*>(a.inputs[3]));
    p->xl.set_data_handle(const_cast<void*>(a.inputs[4]));
    p->dst.set_data_handle(a.output);
    dnnl::stream& stream = onednn_stream();
    p->prim.execute(stream, p->args);
    stream.wait();
  });
}

}  // namespace luminal::cpu
