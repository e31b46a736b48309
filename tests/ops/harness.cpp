// The harness core: case registry, running a case on a runtime, comparing results.
#include "ops/harness.h"

#include <cmath>
#include <ostream>
#include <stdexcept>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "luminal/reference.h"

namespace luminal::ops_test {

GraphTensor CaseIO::in(GraphTensor t, std::vector<double> values) {
  inputs.emplace_back(t, std::move(values));
  return t;
}

GraphTensor CaseIO::out(GraphTensor t, std::vector<double> want) {
  t = out_unchecked(t);
  expected.back() = std::move(want);
  return t;
}

GraphTensor CaseIO::out_unchecked(GraphTensor t) {
  if (t.node().kind != OpKind::Output) t.output();
  outputs.push_back(t);
  expected.emplace_back(std::nullopt);
  return t;
}

void PrintTo(const OpCase& c, std::ostream* os) { *os << c.name; }

Tolerance default_tolerance(DType dt) {
  switch (dt) {
    case DType::F32:
      return {1e-5, 1e-5};
    case DType::F64:
      return {1e-10, 1e-10};
    case DType::F16:
      return {1e-3, 1e-3};
    case DType::BF16:
      return {1e-2, 1e-2};
    default:
      return {0, 0};
  }
}

std::vector<OpCase>& op_cases() {
  static std::vector<OpCase> cases;
  return cases;
}

bool register_case(OpCase c) {
  op_cases().push_back(std::move(c));
  return true;
}

namespace {

std::string index_string(int64_t flat, const std::vector<int64_t>& dims) {
  std::vector<int64_t> idx(dims.size());
  for (size_t d = dims.size(); d-- > 0;) {
    idx[d] = dims[d] > 0 ? flat % dims[d] : 0;
    flat = dims[d] > 0 ? flat / dims[d] : 0;
  }
  return fmt::format("[{}]", fmt::join(idx, ", "));
}

bool close(double got, double want, Tolerance tol) {
  if (std::isnan(want)) return std::isnan(got);
  if (std::isinf(want)) return got == want;
  return std::abs(got - want) <= tol.atol + tol.rtol * std::abs(want);
}

/// Which result of which case, for messages.
struct Where {
  const OpCase* c;
  size_t index;
  const GraphTensor* t;
  std::vector<int64_t> dims;
};

/// Adds one gtest failure describing the first mismatch (and how many there are).
void compare(const std::string& what, const Where& w, const std::vector<double>& got,
             const std::vector<double>& want, Tolerance tol) {
  std::string head = fmt::format("{} result #{} ({} {}) {}", w.c->name, w.index,
                                 dtype_name(w.t->dtype), fmt::join(w.dims, "x"), what);
  if (got.size() != want.size()) {
    ADD_FAILURE() << head << ": got " << got.size() << " values, want " << want.size();
    return;
  }
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < got.size(); ++i) {
    if (close(got[i], want[i], tol)) continue;
    if (first < 0) first = static_cast<int64_t>(i);
    ++bad;
  }
  if (first < 0) return;
  ADD_FAILURE() << head
                << fmt::format(
                       ": {} of {} mismatch; first at {} {}: got {:.9g}, want {:.9g} "
                       "(atol {:g}, rtol {:g})",
                       bad, got.size(), first, index_string(first, w.dims), got[first], want[first],
                       tol.atol, tol.rtol);
}

Tolerance case_tolerance(const OpCase& c, DType dt) {
  Tolerance tol = default_tolerance(dt);
  if (!is_float(dt)) return tol;
  if (c.atol) tol.atol = *c.atol;
  if (c.rtol) tol.rtol = *c.rtol;
  return tol;
}

void check_inputs(const OpCase& c, const CaseIO& io) {
  if (io.outputs.empty()) throw std::invalid_argument("[harness] " + c.name + ": no outputs");
  if (io.expected.size() != io.outputs.size()) {
    throw std::invalid_argument(fmt::format("[harness] {}: {} expectations for {} outputs", c.name,
                                            io.expected.size(), io.outputs.size()));
  }
  for (const auto& [t, v] : io.inputs) {
    int64_t n = product(t.dims()).eval(io.dyn);
    if (static_cast<int64_t>(v.size()) != n) {
      throw std::invalid_argument(fmt::format("[harness] {}: input '{}' {} has {} values, needs {}",
                                              c.name, t.node().name, shape_string(t.dims()),
                                              v.size(), n));
    }
  }
}

std::vector<std::vector<double>> execute_case(Runtime& rt, const CaseIO& io) {
  for (const auto& [t, v] : io.inputs) set_input(rt, t, v);
  rt.execute(io.dyn);
  std::vector<std::vector<double>> out;
  for (const GraphTensor& t : io.outputs) out.push_back(read_output(rt, t));
  return out;
}

/// Checks every result that has an expectation.
void check_expected(const std::string& what, const OpCase& c, const CaseIO& io,
                    const std::vector<std::vector<double>>& got) {
  for (size_t i = 0; i < io.outputs.size(); ++i) {
    Where w{&c, i, &io.outputs[i], eval_all(io.outputs[i].dims(), io.dyn)};
    if (io.expected[i]) compare(what, w, got[i], *io.expected[i], case_tolerance(c, w.t->dtype));
  }
}

}  // namespace

void run_case_on(const OpCase& c, const RuntimeFactory& make_runtime, bool compare_to_reference) {
  Graph g;
  CaseIO io = c.build(g);
  check_inputs(c, io);
  if (!compare_to_reference) {
    for (size_t i = 0; i < io.expected.size(); ++i) {
      if (!io.expected[i]) ADD_FAILURE() << c.name << " result #" << i << " has no expectation";
    }
  }
  std::vector<std::vector<double>> ref;
  if (compare_to_reference) {
    ReferenceRuntime cpu(g);
    ref = execute_case(cpu, io);
    check_expected("on the reference runtime vs expected", c, io, ref);
  }
  std::unique_ptr<Runtime> rt = make_runtime(g);
  std::vector<std::vector<double>> got = execute_case(*rt, io);
  check_expected("vs expected", c, io, got);
  if (!compare_to_reference) return;
  for (size_t i = 0; i < io.outputs.size(); ++i) {
    Where w{&c, i, &io.outputs[i], eval_all(io.outputs[i].dims(), io.dyn)};
    compare("vs the reference runtime", w, got[i], ref[i], case_tolerance(c, w.t->dtype));
  }
}

}  // namespace luminal::ops_test
