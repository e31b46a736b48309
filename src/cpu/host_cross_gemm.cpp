#include "cpu/host_cross_gemm.h"

#include <optional>
#include <string>
#include <unordered_map>

#include "cpu/onednn.h"

namespace luminal::cpu {

// The primitive (weights as bound), the one reading packed weights where that applies, and the
// memory handles (data pointers set per run).
struct HostCrossGemm::Primitive {
  dnnl::matmul plain;
  std::optional<dnnl::matmul> packed_prim;
  dnnl::memory::desc wei_plain, wei_packed;
  WeightPacks* packs = nullptr;
  dnnl::memory src, wei, bias, dst, x0, xl;
  std::unordered_map<int, dnnl::memory> args;
};

HostCrossGemm::HostCrossGemm(std::unique_ptr<Primitive> p) : p_(std::move(p)) {}
HostCrossGemm::~HostCrossGemm() = default;

std::unique_ptr<HostCrossGemm> HostCrossGemm::make(const custom::CrossGemm& op,
                                                   const std::vector<std::vector<int64_t>>& dims, DType dtype,
                                                   WeightPacks* packs) {
  const custom::CrossGemmShape& s = op.shape();
  if (dims.size() != 5 || dims[0].size() != 2 || dtype != s.dtype) return nullptr;
  const dnnl::memory::data_type dt = *onednn_type(dtype);  // CrossGemmShape::validate: F32, F16 or BF16
  const int64_t m = dims[0][0], n = s.n, k = s.k;
  if (m < 1) return nullptr;
  using md = dnnl::memory::desc;
  using tags = dnnl::memory::dims;
  auto p = std::make_unique<Primitive>();
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
    if (std::string(pd.impl_info_str()).find("ref") != std::string::npos) return nullptr;
    p->plain = dnnl::matmul(pd);
    p->wei_plain = wei;
    // The same primitive reading W in the layout it picks, used while W is constant.
    if (packs != nullptr) {
      const dnnl::matmul::primitive_desc any(
          dnnl::matmul::desc(src, md({k, n}, dt, dnnl::memory::format_tag::any), bias, dst), attr, onednn_engine());
      if (any.weights_desc() != wei && packs->reserve(p.get(), any.weights_desc())) {
        p->packed_prim = dnnl::matmul(any);
        p->wei_packed = any.weights_desc();
        p->packs = packs;
      }
    }
    p->src = dnnl::memory(src, onednn_engine(), nullptr);
    p->wei = dnnl::memory(wei, onednn_engine(), nullptr);
    p->bias = dnnl::memory(bias, onednn_engine(), nullptr);
    p->dst = dnnl::memory(dst, onednn_engine(), nullptr);
    p->x0 = dnnl::memory(dst, onednn_engine(), nullptr);
    p->xl = dnnl::memory(dst, onednn_engine(), nullptr);
  } catch (const dnnl::error&) {
    return nullptr;
  }
  p->args = {{DNNL_ARG_SRC, p->src},
             {DNNL_ARG_WEIGHTS, p->wei},
             {DNNL_ARG_BIAS, p->bias},
             {DNNL_ARG_DST, p->dst},
             {DNNL_ARG_ATTR_MULTIPLE_POST_OP(0) | DNNL_ARG_SRC_1, p->x0},
             {DNNL_ARG_ATTR_MULTIPLE_POST_OP(1) | DNNL_ARG_SRC_1, p->xl}};
  return std::unique_ptr<HostCrossGemm>(new HostCrossGemm(std::move(p)));
}

void HostCrossGemm::run(const HostKernelArgs& a, uint64_t w_version) {
  Primitive& p = *p_;
  p.src.set_data_handle(const_cast<void*>(a.inputs[0]));
  p.bias.set_data_handle(const_cast<void*>(a.inputs[2]));
  p.x0.set_data_handle(const_cast<void*>(a.inputs[3]));
  p.xl.set_data_handle(const_cast<void*>(a.inputs[4]));
  p.dst.set_data_handle(a.output);
  const bool packed = p.packed_prim && w_version != 0;
  if (packed) {
    p.args[DNNL_ARG_WEIGHTS] = p.packs->get(p_.get(), static_cast<const std::byte*>(a.inputs[1]), w_version,
                                            p.wei_plain, p.wei_packed);
  } else {
    p.wei.set_data_handle(const_cast<void*>(a.inputs[1]));
    p.args[DNNL_ARG_WEIGHTS] = p.wei;
  }
  dnnl::stream& stream = onednn_stream();
  (packed ? *p.packed_prim : p.plain).execute(stream, p.args);
  stream.wait();
}

}  // namespace luminal::cpu
