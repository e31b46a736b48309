// Device capabilities for tests that ask custom ops for kernels without a device: the H200's (the
// GPU tests' machine), so kernels and launch shapes match what runs there.
#pragma once

#include <optional>
#include <vector>

#include "luminal/compile.h"
#include "luminal/custom_op.h"

namespace luminal::test {

/// The H200 as the CUDA backend reports it (132 SMs, 227 KB opt-in shared memory, 60 MB L2).
inline const DeviceCaps& h200_caps() {
  static const DeviceCaps caps{"NVIDIA H200", "sm_90", 9, 0, 132, 232448, 233472,
                               size_t{60} << 20, size_t{139} << 30};
  return caps;
}

/// op's CUDA kernel for these inputs on `caps` (the H200 by default).
inline std::optional<CustomKernel> cuda_kernel_for(const CustomOp& op,
                                                   const std::vector<std::vector<int64_t>>& dims,
                                                   const std::vector<DType>& dtypes,
                                                   const DeviceCaps& caps = h200_caps()) {
  return op.cuda_kernel(KernelRequest{dims, dtypes, caps});
}

/// The reference backend claiming a kernel for every custom op, searchable, with the rules' "auto"
/// default: compile()'s choices (rules, search, states) on a machine without a GPU, every plan
/// running on the reference (custom ops through their decompositions), with H200 capabilities.
class KernelClaimingBackend final : public Backend {
 public:
  std::string kind() const override { return "test"; }
  std::string description() const override { return "reference claiming kernels"; }
  const DeviceCaps& caps() const override { return h200_caps(); }
  std::unique_ptr<BackendPlan> build(const BuildRequest& request) const override {
    return reference_backend()->build(request);
  }
  bool has_kernel(std::string_view op) const override {
    (void)op;
    return true;
  }
};

/// A shared KernelClaimingBackend.
inline Target kernel_claiming_backend() {
  static const Target b = std::make_shared<KernelClaimingBackend>();
  return b;
}

/// The kernel-claiming backend under CUDA's name: rules' CUDA-only offers and refusals without a GPU.
class ClaimingCuda final : public Backend {
 public:
  std::string kind() const override { return "cuda"; }
  std::string description() const override { return "reference claiming CUDA kernels"; }
  const DeviceCaps& caps() const override { return h200_caps(); }
  std::unique_ptr<BackendPlan> build(const BuildRequest& request) const override {
    return kernel_claiming_backend()->build(request);
  }
  bool has_kernel(std::string_view) const override { return true; }
};

}  // namespace luminal::test
