// Device names to compile targets: the one place that knows which backend a name means.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "luminal/compile.h"
#include "luminal/cpu.h"
#include "luminal/cuda.h"

namespace luminal {

/// The backend for a device name:
///   "reference"       the CPU reference runtime (the oracle: plain loops, never searched);
///   "cpu"             the CPU backend (native generated kernels, oneDNN matmuls) with `cpu` options;
///   "cuda", "cuda:N"  the CUDA backend on GPU N (0 by default) with `cuda` options;
///   "auto"            "cuda" when a GPU is usable, else "cpu".
/// Throws "[device] unknown device 'x' (...)" for another name, "[cuda] ..." when CUDA is absent.
Target backend_for(std::string_view device, const cuda::CudaOptions& cuda = {},
                   const cpu::CpuOptions& cpu = {});

/// The name "auto" resolves to here: "cuda" when a GPU is usable, else "cpu".
std::string auto_device();

/// Where a target's tensors live, as PyTorch names devices: "cuda" for the CUDA backend, "cpu" for
/// host backends (the reference, the CPU backend).
std::string tensor_device(const Backend& target);

/// The device names backend_for accepts.
std::vector<std::string> device_names();

}  // namespace luminal
