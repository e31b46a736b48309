// RmsNorm's input checks and reference decomposition: exactly nn::rms_norm's ops.
#include <stdexcept>

#include <fmt/format.h>

#include "custom/rms_norm/op.h"
#include "luminal/nn.h"

namespace luminal::custom {

void check_rms_norm_inputs(const GraphTensor& x, const GraphTensor& weight) {
  const DType dt = x.dtype;
  if (x.rank() < 1 || (dt != DType::F32 && dt != DType::BF16 && dt != DType::F16))
    throw std::invalid_argument(fmt::format("[rms_norm] x is {} {}, expected [rows..., D] f32, bf16 or f16",
                                            dtype_name(dt), shape_string(x.dims())));
  if (weight.rank() != 1 || weight.dtype != dt || !weight.dims()[0].same(x.dims().back()))
    throw std::invalid_argument(fmt::format("[rms_norm] weight is {} {}, expected [{}] {} (x's last dim)",
                                            dtype_name(weight.dtype), shape_string(weight.dims()),
                                            x.dims().back().to_string(), dtype_name(dt)));
}

GraphTensor RmsNorm::decompose(Graph& g, const std::vector<GraphTensor>& inputs) const {
  (void)g;
  if (inputs.size() != 2)
    throw std::invalid_argument(
        fmt::format("[rms_norm] {} inputs, expected 2 (x, weight)", inputs.size()));
  check_rms_norm_inputs(inputs[0], inputs[1]);
  return nn::rms_norm(inputs[0], inputs[1], eps_);
}

}  // namespace luminal::custom
