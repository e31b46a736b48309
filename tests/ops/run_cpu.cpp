// Runs every harness case on the CPU reference runtime against its independent expectations, and
// on the CPU backend against them and the reference (outputs and intermediates poisoned before
// each run, so a kernel that skips an element cannot pass).
#include <algorithm>
#include <regex>
#include <set>

#include <gtest/gtest.h>

#include "luminal/compile.h"
#include "luminal/cpu.h"
#include "luminal/reference.h"
#include "ops/harness.h"

namespace luminal::ops_test {
namespace {

class CpuOps : public ::testing::TestWithParam<OpCase> {};

TEST_P(CpuOps, MatchesExpected) {
  run_case_on(
      GetParam(), [](const Graph& g) { return std::make_unique<ReferenceRuntime>(g); },
      /*compare_to_reference=*/false);
}

class CpuBackendOps : public ::testing::TestWithParam<OpCase> {};

TEST_P(CpuBackendOps, MatchesReference) {
  run_case_on(
      GetParam(),
      [](const Graph& g) -> std::unique_ptr<Runtime> {
        cpu::CpuOptions o;
        o.poison = true;
        const CompileOptions options;  // (a named object: g++ 12 warns on a temporary here)
        return compile(g, cpu::backend(o), options);
      },
      /*compare_to_reference=*/true);
}

/// gtest parameter names allow only [A-Za-z0-9_]: "SumReduceCase/axis1" -> "SumReduceCase_axis1".
std::string param_name(const ::testing::TestParamInfo<OpCase>& info) {
  std::string s = info.param.name;
  std::replace(s.begin(), s.end(), '/', '_');
  return s;
}

INSTANTIATE_TEST_SUITE_P(OpCase, CpuOps, ::testing::ValuesIn(op_cases()), param_name);
INSTANTIATE_TEST_SUITE_P(OpCase, CpuBackendOps, ::testing::ValuesIn(op_cases()), param_name);

TEST(OpCaseRegistry, NamesAreUniqueAndFollowTheConvention) {
  const std::regex form("[A-Z][A-Za-z0-9]*Case/[a-z0-9_]+");
  std::set<std::string> seen;
  for (const OpCase& c : op_cases()) {
    EXPECT_TRUE(std::regex_match(c.name, form)) << c.name;
    EXPECT_TRUE(seen.insert(c.name).second) << "duplicate case " << c.name;
  }
  EXPECT_GT(op_cases().size(), 100u);
}

}  // namespace
}  // namespace luminal::ops_test
