// The CPU backend's oneDNN handles, shared by its matmul steps (host_matmul, host_cross_gemm, host_int8_matmul).
#pragma once

#include <optional>

#include <oneapi/dnnl/dnnl.hpp>

#include "luminal/dtype.h"

namespace luminal::cpu {

/// The process's one CPU engine.
dnnl::engine& onednn_engine();
/// This thread's stream on it.
dnnl::stream& onednn_stream();
/// oneDNN's data type for F32 / BF16 / F16, else nullopt.
std::optional<dnnl::memory::data_type> onednn_type(DType dt);

}  // namespace luminal::cpu
