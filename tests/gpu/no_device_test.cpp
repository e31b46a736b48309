// Behavior on machines without a usable GPU (this runs on the CPU CI and development machines).
#include <gtest/gtest.h>

#include "gpu/gpu_test_util.h"
#include "luminal/cuda.h"
#include "gpu_options.h"
#include "luminal/compile.h"

namespace luminal {
namespace {

TEST(CudaAvailability, DescriptionIsNeverEmpty) {
  const std::string d = cuda::device_description();
  EXPECT_FALSE(d.empty());
  if (cuda::available()) {
    EXPECT_NE(d.find("sm_"), std::string::npos) << d;
  }
}

TEST(CudaAvailability, ConstructorExplainsWhyWithoutDevice) {
  if (cuda::available()) GTEST_SKIP() << "a device is present: " << cuda::device_description();
  Graph g;
  GraphTensor x = g.named_tensor("x", {4});
  (x * 2.0).output();
  gpu_test::expect_error([&] { Executable rt(g, cuda::backend()); }, {"[cuda]"});
}

// Checked before the device is opened: this runs with and without a GPU.
TEST(CudaAvailability, ABadCandidateIsRefusedAtConstruction) {
  if (cuda::device_description() == "built without CUDA") GTEST_SKIP() << "the CUDA stub";
  Graph g;
  GraphTensor x = g.named_tensor("x", {4});
  (x * 2.0).output();
  test::GpuOptions o;
  o.candidate = "matmul@3";
  gpu_test::expect_error([&] { Executable rt(g, cuda::backend(o.cuda), o); },
                         {"[search] malformed candidate 'matmul@3' (expected key=option"});
  Graph s;
  GraphTensor c = s.named_tensor("c", {4});
  (c + 1.0).output_into(c);
  o.candidate = "matmul@3=generated";
  gpu_test::expect_error([&] { Executable rt(s, cuda::backend(o.cuda), o); },
                         {"[search] candidate 'matmul@3=generated': this graph updates its inputs"});
}

// Dim buckets are checked against the graph before the device is opened.
TEST(CudaAvailability, BadBucketsAreRefusedAtConstruction) {
  if (cuda::device_description() == "built without CUDA") GTEST_SKIP() << "the CUDA stub";
  Graph g;
  (g.named_tensor("x", {Expr::sym("batch"), 4}) * 2.0).output();
  test::GpuOptions o;
  o.buckets = {"rows", pow2_buckets(1, 8)};
  gpu_test::expect_error([&] { Executable rt(g, cuda::backend(o.cuda), o); },
                         {"[bucket] 'rows' is not a dynamic dim of the graph"});
  o.buckets = {"batch", {{1, 8}, {8, 16}}};
  gpu_test::expect_error([&] { Executable rt(g, cuda::backend(o.cuda), o); },
                         {"[bucket] ranges [1, 8] and [8, 16] overlap"});
}

TEST(CudaAvailability, BadDeviceOrdinalIsAnError) {
  if (!cuda::available()) GTEST_SKIP() << "no CUDA device";
  Graph g;
  (g.named_tensor("x", {4}) * 2.0).output();
  cuda::CudaOptions o;
  o.device = 4096;
  gpu_test::expect_error([&] { Executable rt(g, cuda::backend(o)); }, {"[cuda]", "4096"});
}

}  // namespace
}  // namespace luminal
