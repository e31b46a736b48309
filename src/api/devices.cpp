// The device registry: names to backends (shared/DESIGN.md section 6: no device-name compares
// anywhere else).
#include "luminal/devices.h"

#include <fmt/format.h>

#include <charconv>
#include <stdexcept>

namespace luminal {

std::string auto_device() { return cuda::available() ? "cuda" : "cpu"; }

std::string tensor_device(const Backend& target) {
  return target.kind() == "cuda" ? "cuda" : "cpu";
}

std::vector<std::string> device_names() { return {"auto", "cpu", "reference", "cuda", "cuda:N"}; }

Target backend_for(std::string_view device, const cuda::CudaOptions& cuda, const cpu::CpuOptions& cpu) {
  if (device == "auto") return backend_for(auto_device(), cuda, cpu);
  if (device == "reference") return reference_backend();
  if (device == "cpu") return cpu::backend(cpu);
  if ((device == "cuda" || device.starts_with("cuda:")) && !cuda::available())
    throw std::runtime_error(fmt::format("[device] {}: no usable GPU: {}", device,
                                         cuda::device_description()));
  if (device == "cuda") return cuda::backend(cuda);
  if (device.starts_with("cuda:")) {
    const std::string_view n = device.substr(5);
    int ordinal = -1;
    const auto [end, ec] = std::from_chars(n.data(), n.data() + n.size(), ordinal);
    if (ec == std::errc{} && end == n.data() + n.size() && ordinal >= 0) {
      cuda::CudaOptions o = cuda;
      o.device = ordinal;
      return cuda::backend(o);
    }
  }
  throw std::invalid_argument(fmt::format(
      "[device] unknown device '{}' (auto, cpu, reference, cuda or cuda:N)", device));
}

}  // namespace luminal
