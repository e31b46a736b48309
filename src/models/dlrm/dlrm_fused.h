// The DLRM's fused sparse path: one custom::DlrmSparse node (internal to src/models/dlrm).
#pragma once

#include "luminal/models/dlrm.h"
#include "luminal/nn.h"

namespace luminal::models {

/// The top MLP's input [B, d + n(n-1)/2] in activation_dtype(c.precision) from one DlrmSparse node
/// on x (the bottom MLP's output) and every table's (scale_bias,) indices and offsets (c.jagged).
GraphTensor fused_sparse(const DlrmConfig& c, const DlrmTensors& t, const GraphTensor& x);

}  // namespace luminal::models
