#include "cpu/onednn.h"

namespace luminal::cpu {

dnnl::engine& onednn_engine() {
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& onednn_stream() {
  static thread_local dnnl::stream s(onednn_engine());
  return s;
}

std::optional<dnnl::memory::data_type> onednn_type(DType dt) {
  switch (dt) {
    case DType::F32: return dnnl::memory::data_type::f32;
    case DType::BF16: return dnnl::memory::data_type::bf16;
    case DType::F16: return dnnl::memory::data_type::f16;
    default: return std::nullopt;
  }
}

}  // namespace luminal::cpu
