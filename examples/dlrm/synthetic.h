// `dlrm run --preset P --synthetic SEED`: a DLRM-v2 preset with weights and inputs from a seed.
#pragma once

#include "commands.h"
#include "inputs.h"
#include "luminal/backend.h"
#include "luminal/models/dlrm.h"

namespace dlrm {

/// The preset's config at o.precision and its synthetic inputs (MLPerf's multi-hot sizes, uniform
/// rows) in `in`; `expected` from the CPU reference when the fp32 weights fit 256 MB. Throws
/// "[dlrm] ..." for bad options and, before allocating anything, when the weights do not fit the
/// target's memory (device memory, or the host's available memory).
luminal::models::DlrmConfig synthetic_model(const RunOptions& o, const luminal::Backend& target, DlrmInputs& in);

}  // namespace dlrm
