// The op-consistency harness: one case per op or pattern builds a small graph; every runtime runs
// it and is compared with the case's independent expectations (hand-computed or PyTorch fixtures)
// and with the CPU reference runtime. Runtime-agnostic: the CPU and GPU test binaries share it.
//
// How to add a case: in tests/ops/cases/<family>.cpp write
//   LUMINAL_OP_CASE(SumReduceCase, axis1) {
//     CaseIO io;
//     GraphTensor x = io.in(g.named_tensor("x", {2, 3}), {1, 2, 3, 4, 5, 6});
//     io.out(x.sum(1), {6, 15});
//     return io;
//   }
// and list it in tests/ops/COVERAGE.md.
#pragma once

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "luminal/runtime.h"
#include "luminal/tensor.h"

namespace luminal::ops_test {

/// What a case builds: inputs with their values, results, one expectation per result, dyn values.
struct CaseIO {
  std::vector<std::pair<GraphTensor, std::vector<double>>> inputs;
  std::vector<GraphTensor> outputs;
  std::vector<std::optional<std::vector<double>>> expected;
  DynMap dyn;

  /// Registers an Input and its values (converted to its dtype when set); returns the tensor.
  GraphTensor in(GraphTensor t, std::vector<double> values);
  /// Marks t as a result (adds an Output node unless t already is one) with an expectation.
  GraphTensor out(GraphTensor t, std::vector<double> want);
  /// Marks t as a result with no expectation (compared with the reference runtime only).
  GraphTensor out_unchecked(GraphTensor t);
};

/// One harness case. Tolerances default per result dtype (see default_tolerance); an override
/// applies to float results only (integer and Bool results are always compared exactly).
struct OpCase {
  std::string name;  // "<Op>Case/<variant>"
  std::function<CaseIO(Graph&)> build;
  std::optional<double> atol, rtol;
};

/// Prints the case name (gtest parameter printing).
void PrintTo(const OpCase& c, std::ostream* os);

/// Absolute and relative tolerance for comparing results of dtype dt.
struct Tolerance {
  double atol = 0, rtol = 0;
};
/// f32 1e-5, f64 1e-10, f16 1e-3, bf16 1e-2, integers and Bool exact.
Tolerance default_tolerance(DType dt);

/// Every registered case, in registration order.
std::vector<OpCase>& op_cases();
/// Adds a case to op_cases() (called by LUMINAL_OP_CASE at static-init time).
bool register_case(OpCase c);

/// Builds a runtime for a graph (a ReferenceRuntime, a CudaRuntime, ...).
using RuntimeFactory = std::function<std::unique_ptr<Runtime>(const Graph&)>;

/// Runs a case on make_runtime's runtime and checks every result against its expectation
/// (reporting gtest failures with the case, result, first mismatching index, got vs want).
/// With compare_to_reference, the case also runs on the CPU reference runtime, which is checked
/// against the expectations and then used as the oracle for the runtime under test; without it,
/// every result must have an expectation.
void run_case_on(const OpCase& c, const RuntimeFactory& make_runtime, bool compare_to_reference);

// ---- value helpers (used by cases; independent of any runtime) ----

/// Sets an input of any dtype from doubles (f16/bf16 rounded to nearest even, integers exact).
void set_input(Runtime& rt, const GraphTensor& t, const std::vector<double>& values);
/// Reads a result of any dtype as doubles.
std::vector<double> read_output(Runtime& rt, const GraphTensor& t);
/// The values as they are stored in dt (f16/bf16/f32 rounding, integer truncation, Bool 0/1).
std::vector<double> quantize(std::vector<double> values, DType dt);
/// n uniform values in [lo, hi) from std::mt19937(seed); never all zeros.
std::vector<double> random_values(size_t n, double lo, double hi, uint32_t seed = 1234);
/// start, start + step, ... (n values).
std::vector<double> ramp(size_t n, double start = 0, double step = 1);

/// A tensor read from tests/fixtures/ops.safetensors (written by tests/fixtures/make_fixtures.py).
struct Fixture {
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<double> values;
  /// The shape as Exprs (for named_tensor).
  std::vector<Expr> dims() const;
};
/// The fixture tensor with this name ("softmax_axis1.x"); throws when missing.
Fixture fixture(const std::string& name);
/// Declares an Input named `name` shaped like the fixture, registers its values, returns it.
/// dt overrides the input dtype (the fixture values are converted).
GraphTensor fixture_input(Graph& g, CaseIO& io, const std::string& name,
                          std::optional<DType> dt = std::nullopt);

}  // namespace luminal::ops_test

#define LUMINAL_OP_CASE_CAT_(a, b) a##_##b
/// Defines and registers a case named "<op>/<variant>" with explicit tolerances for float results.
#define LUMINAL_OP_CASE_TOL(op, variant, atol_, rtol_)                                        \
  static ::luminal::ops_test::CaseIO LUMINAL_OP_CASE_CAT_(op, variant)(::luminal::Graph & g); \
  [[maybe_unused]] static const bool LUMINAL_OP_CASE_CAT_(op##_reg, variant) =                \
      ::luminal::ops_test::register_case(                                                     \
          {#op "/" #variant, &LUMINAL_OP_CASE_CAT_(op, variant), atol_, rtol_});              \
  static ::luminal::ops_test::CaseIO LUMINAL_OP_CASE_CAT_(op, variant)(::luminal::Graph & g)
/// Defines and registers a case named "<op>/<variant>" with dtype-default tolerances.
#define LUMINAL_OP_CASE(op, variant) LUMINAL_OP_CASE_TOL(op, variant, std::nullopt, std::nullopt)
