// The CUDA driver API, loaded with dlopen at first use so binaries start on machines without a
// driver.
#pragma once

#include <cuda.h>  // types and prototypes only; nothing here links against libcuda

#include <string>
#include <string_view>

#include "luminal/cuda.h"

namespace luminal::cuda {

// Every driver entry point the runtime uses, by its exported symbol name (the _v2 names where
// cuda.h maps the plain name to them). How to add one: append a row; the loader resolves it.
#define LUMINAL_CU_FUNCTIONS(X)                                                                   \
  X(cuInit)                                                                                       \
  X(cuDriverGetVersion)                                                                           \
  X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetAttribute) X(cuDeviceGetName)                   \
      X(cuDeviceTotalMem_v2) X(cuDevicePrimaryCtxRetain) X(cuCtxSetCurrent) X(cuModuleLoadData)   \
          X(cuModuleGetFunction) X(cuModuleUnload) X(cuFuncSetAttribute) X(cuLaunchKernel)        \
              X(cuMemAlloc_v2) X(cuMemFree_v2) X(cuMemGetInfo_v2) X(cuMemcpyHtoDAsync_v2) X(cuMemcpyDtoHAsync_v2)    \
                  X(cuMemcpyDtoDAsync_v2) X(cuMemsetD8Async) X(cuMemHostAlloc) X(cuMemFreeHost)   \
                      X(cuStreamCreate) X(cuStreamCreateWithPriority) X(cuCtxGetStreamPriorityRange) X(cuStreamDestroy_v2) X(cuStreamSynchronize) X(cuStreamWaitEvent)              \
                          X(cuStreamBeginCapture_v2) X(cuStreamEndCapture)                        \
                              X(cuGraphInstantiateWithFlags) X(cuGraphLaunch)                     \
                                  X(cuGraphExecUpdate_v2) X(cuGraphDestroy) X(cuGraphExecDestroy) \
                                      X(cuEventCreate) X(cuEventRecord) X(cuEventSynchronize)     \
                                          X(cuEventElapsedTime_v2) X(cuEventDestroy_v2)           \
                                              X(cuPointerGetAttribute) X(cuMemGetAddressRange_v2) \
                                                  X(cuGetErrorName) X(cuGetErrorString)

/// Function table of the dynamically loaded driver; members are named like the symbols.
struct Driver {
#define LUMINAL_CU_MEMBER(name) decltype(&::name) name = nullptr;
  LUMINAL_CU_FUNCTIONS(LUMINAL_CU_MEMBER)
#undef LUMINAL_CU_MEMBER
};

/// The loaded and initialized driver (cuInit done); throws "[cuda] ..." when it cannot be loaded.
const Driver& drv();
/// Why the driver cannot be used, or "" when drv() works (never throws).
const std::string& driver_problem();

/// Throws "[cuda] NAME(...) failed: CUDA_ERROR_X: text (context)"; `call` is the quoted call.
[[noreturn]] void throw_cuda_error(CUresult r, const char* call, std::string_view context);
/// "CUDA_ERROR_X: text" for a result code (works when the driver is not loaded).
std::string cuda_error_text(CUresult r);

/// Checks a driver result; formats nothing unless it failed.
inline void check_cu(CUresult r, const char* call, std::string_view context = {}) {
  if (r != CUDA_SUCCESS) [[unlikely]]
    throw_cuda_error(r, call, context);
}

/// The process-wide settings (set_environment's, else the defaults); reading them freezes them.
const CudaEnvironment& environment();

}  // namespace luminal::cuda

/// Checks a driver call, quoting it in the error: CHECK_CUDA(drv().cuMemAlloc_v2(&p, n)).
#define CHECK_CUDA(call) ::luminal::cuda::check_cu((call), #call)
/// Same, naming what the call was for: CHECK_CUDA_CTX(..., "kernel k3_sum_reduce").
#define CHECK_CUDA_CTX(call, ctx) ::luminal::cuda::check_cu((call), #call, (ctx))
