// Tests of the harness itself: wrong or missing expectations must fail with a useful message, and
// the compare-to-reference path (what GPU runners use) must run and agree on the CPU.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include "luminal/reference.h"
#include "ops/harness.h"

namespace luminal::ops_test {
namespace {

std::unique_ptr<Runtime> make_cpu(const Graph& g) { return std::make_unique<ReferenceRuntime>(g); }

/// x + 1 with a wrong expectation at index 2.
OpCase wrong_case() {
  return {"HarnessCase/wrong", [](Graph& g) {
            CaseIO io;
            GraphTensor x = io.in(g.named_tensor("x", {3}), {1, 2, 3});
            io.out(x + 1.0, {2, 3, 5});
            return io;
          }};
}

/// x * 2 with no expectation.
OpCase unchecked_case() {
  return {"HarnessCase/unchecked", [](Graph& g) {
            CaseIO io;
            GraphTensor x = io.in(g.named_tensor("x", {2}), {1, 2});
            io.out_unchecked(x * 2.0);
            return io;
          }};
}

TEST(OpCaseHarness, WrongExpectationFailsNamingIndexAndValues) {
  EXPECT_NONFATAL_FAILURE(run_case_on(wrong_case(), make_cpu, false),
                          "1 of 3 mismatch; first at 2 [2]: got 4, want 5");
}

TEST(OpCaseHarness, MissingExpectationFailsWithoutReference) {
  EXPECT_NONFATAL_FAILURE(run_case_on(unchecked_case(), make_cpu, false), "has no expectation");
}

TEST(OpCaseHarness, UncheckedResultIsComparedWithTheReference) {
  run_case_on(unchecked_case(), make_cpu, true);
}

TEST(OpCaseHarness, WrongInputCountIsACaseError) {
  OpCase c{"HarnessCase/bad_input", [](Graph& g) {
             CaseIO io;
             GraphTensor x = io.in(g.named_tensor("x", {3}), {1, 2});
             io.out(x, {1, 2});
             return io;
           }};
  try {
    run_case_on(c, make_cpu, false);
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("input 'x' [3] has 2 values, needs 3"), std::string::npos)
        << e.what();
  }
}

TEST(OpCaseHarness, ToleranceDefaultsPerDtype) {
  EXPECT_EQ(default_tolerance(DType::F32).rtol, 1e-5);
  EXPECT_EQ(default_tolerance(DType::F16).rtol, 1e-3);
  EXPECT_EQ(default_tolerance(DType::BF16).rtol, 1e-2);
  EXPECT_EQ(default_tolerance(DType::I32).atol, 0);
  EXPECT_EQ(quantize({0.1}, DType::F16)[0], 0.0999755859375);
  EXPECT_EQ(quantize({-2.7}, DType::I32)[0], -2);
}

TEST(OpCaseHarness, EveryCaseAgreesWithTheReferenceThroughTheRuntimePath) {
  // The GPU runner's code path, with the CPU runtime standing in for the device.
  for (const OpCase& c : op_cases()) {
    SCOPED_TRACE(c.name);
    run_case_on(c, make_cpu, true);
  }
}

}  // namespace
}  // namespace luminal::ops_test
