// Cumsum on the CPU: one sequential scan per line along the axis (lines split over OpenMP's threads).
#include "custom/cumsum/op.h"

namespace luminal::custom {

namespace {

template <class T>
void scan(const T* x, T* out, int64_t outer, int64_t len, int64_t inner) {
#pragma omp parallel for collapse(2) if (outer * inner > 64 && outer * len * inner > (1 << 16))
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < inner; ++i) {
      T acc = 0;
      for (int64_t l = 0; l < len; ++l) {
        const int64_t at = (o * len + l) * inner + i;
        acc += x[at];
        out[at] = acc;
      }
    }
}

}  // namespace

std::optional<HostKernel> Cumsum::host_kernel(const KernelRequest& request) const {
  if (request.dims.size() != 1 || axis_ >= int(request.dims[0].size())) return std::nullopt;
  const std::vector<int64_t>& d = request.dims[0];
  int64_t outer = 1, inner = 1;
  for (int k = 0; k < axis_; ++k) outer *= d[size_t(k)];
  for (size_t k = size_t(axis_) + 1; k < d.size(); ++k) inner *= d[k];
  const int64_t len = d[size_t(axis_)];
  const DType dt = request.dtypes[0];
  return [=](const HostKernelArgs& a) {
    switch (dt) {
      case DType::I32: return scan(static_cast<const int32_t*>(a.inputs[0]), static_cast<int32_t*>(a.output), outer, len, inner);
      case DType::I64: return scan(static_cast<const int64_t*>(a.inputs[0]), static_cast<int64_t*>(a.output), outer, len, inner);
      case DType::F64: return scan(static_cast<const double*>(a.inputs[0]), static_cast<double*>(a.output), outer, len, inner);
      default: return scan(static_cast<const float*>(a.inputs[0]), static_cast<float*>(a.output), outer, len, inner);
    }
  };
}

}  // namespace luminal::custom
