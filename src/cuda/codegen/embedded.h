// The device headers (src/cuda/kernels/*.cuh, src/custom/*/*.cuh) embedded at build time.
#pragma once

#include <map>
#include <string>
#include <string_view>

namespace luminal {

/// Embedded header text keyed by file name ("common.cuh"); hand them to NVRTC as named headers.
const std::map<std::string, std::string_view>& embedded_headers();

}  // namespace luminal
