// The GEMV kernel (src/cuda/kernels/gemv.cuh) compiles with NVRTC for sm_90 for every dtype it
// serves, and refuses the others by name.
#include <gtest/gtest.h>

#include "cuda/runtime/gemv.h"
#include "expect_error.h"
#include "nvrtc/nvrtc_compile.h"

namespace luminal {
namespace {

TEST(GemvCompile, EveryServedDtypeCompiles) {
  for (DType dt : {DType::F32, DType::F16, DType::BF16})
    EXPECT_TRUE(test::nvrtc_compiles(cuda::gemv_source(dt), cuda::gemv_entry(dt))) << dtype_name(dt);
}

TEST(GemvCompile, OtherDtypesAreRefused) {
  test::expect_error([] { cuda::gemv_source(DType::F64); }, {"no GEMV kernel", "f64"});
  test::expect_error([] { cuda::gemv_entry(DType::I32); }, {"no GEMV kernel"});
}

}  // namespace
}  // namespace luminal
