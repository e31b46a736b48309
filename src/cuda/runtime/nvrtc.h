// NVRTC: CUDA C++ source to a device image (CUBIN for the device's sm_XY). No CUDA headers here.
#pragma once

#include <string>
#include <vector>

namespace luminal::cuda {

/// A compiled device image: CUBIN, or PTX when NVRTC cannot emit CUBIN for the device.
struct DeviceImage {
  std::string bytes;
  bool is_ptx = false;
};

/// NVRTC's version, "13.0".
std::string nvrtc_version();
/// The NVRTC target for a device of compute capability major.minor: "sm_80" when NVRTC supports
/// that architecture ("sm_90a" for 9.0: its arch-specific features), else "compute_XY" of the newest one below it (PTX the driver compiles).
/// Throws "[nvrtc] ..." when NVRTC supports nothing at or below it.
std::string nvrtc_target(int cc_major, int cc_minor);
/// The NVRTC target of CUDA device `ordinal` (see nvrtc_target); throws "[cuda] ..." without one.
std::string nvrtc_target_of_device(int ordinal);
/// The compile options for a target: architecture, language standard, include directories.
std::vector<std::string> nvrtc_options(const std::string& target);
/// Compiles one translation unit with the embedded device headers available by name. `name` is
/// the kernel (or program) name used in errors. Throws "[nvrtc] compiling <name> failed: ..."
/// with the compiler log (and the source when LUMINAL_DEBUG >= 1).
DeviceImage nvrtc_compile(const std::string& source, const std::string& name,
                          const std::vector<std::string>& options);
/// LUMINAL_DEBUG from the environment (0 when unset or not a number).
int debug_level();

}  // namespace luminal::cuda
