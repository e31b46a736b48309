// CompiledProgram's binding API on the reference runtime: bind() solves the dims before a run (the
// Python package allocates its output tensors from it), device-only calls refuse clearly.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "expect_error.h"
#include "luminal/program.h"

namespace luminal {
namespace {

using test::expect_error;

std::string fixture(const std::string& name) {
  return std::string(LUMINAL_FIXTURES) + "/pt2/" + name;
}

TEST(CompiledProgram, BindGivesTheNextRunsOutputShapes) {
  auto p = CompiledProgram::load(fixture("mlp_t215.pt2"));  // x: [s77, 8] -> [s77, 4]
  std::vector<float> x(9 * 8, 0.5f);
  const int64_t shape9[] = {9, 8};
  p->set_input(0, std::as_bytes(std::span(x)), shape9);
  p->bind();
  EXPECT_EQ(p->output_shape(0), (std::vector<int64_t>{9, 4}));
  p->run();  // bind() left the input bound
  EXPECT_EQ(p->output_bytes(0).size(), 9u * 4 * sizeof(float));
  const int64_t shape3[] = {3, 8};
  p->set_input(0, std::as_bytes(std::span(x).first(24)), shape3);
  p->bind();
  EXPECT_EQ(p->output_shape(0), (std::vector<int64_t>{3, 4}));
}

TEST(CompiledProgram, BindRefusesUnboundAndInconsistentInputs) {
  auto p = CompiledProgram::load(fixture("mlp_t215.pt2"));
  expect_error([&] { p->bind(); }, {"input 'x' was not set"});
  std::vector<float> x(2000 * 8, 0.5f);
  const int64_t shape[] = {2000, 8};
  p->set_input(0, std::as_bytes(std::span(x)), shape);
  expect_error([&] { p->bind(); }, {"outside its exported range"});
}

TEST(CompiledProgram, DeviceOutputsNeedTheCudaRuntime) {
  auto p = CompiledProgram::load(fixture("mlp_t215.pt2"));
  float dummy[4];
  expect_error([&] { p->set_output_device(0, dummy, sizeof(dummy)); },
               {"[set_output_device]", "output_0", "reference backend", "host memory"});
  expect_error([&] { p->set_output_device(3, dummy, sizeof(dummy)); }, {"output 3 out of range"});
  EXPECT_NO_THROW(p->set_stream(nullptr));  // a no-op on the CPU
  expect_error(
      [&] {
        p->set_input_device(0, dummy, 32, std::vector<int64_t>{1, 8});
      },
      {"set_device_ptr", "host memory"});
}

}  // namespace
}  // namespace luminal
