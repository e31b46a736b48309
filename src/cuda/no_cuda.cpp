// The CUDA backend when built without the CUDA toolkit: no device is available, and asking for the
// backend throws.
#include <stdexcept>

#include "luminal/cuda.h"

namespace luminal::cuda {

bool available() { return false; }

std::string device_description() { return "built without CUDA"; }

void set_environment(const CudaEnvironment& env) { (void)env; }

std::shared_ptr<const Backend> backend(const CudaOptions& options) {
  (void)options;
  throw std::runtime_error("[cuda] built without CUDA");
}

}  // namespace luminal::cuda
