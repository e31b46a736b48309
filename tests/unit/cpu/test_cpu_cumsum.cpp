// custom::Cumsum along a concrete and a symbolic axis (a KeyedJaggedTensor's lengths -> offsets with
// a dynamic batch): the CPU backend's scan and the reference's decomposition against loops, every
// dtype, the length changing between executes of one plan; outputs poisoned.
#include <gtest/gtest.h>

#include "cpu_test_util.h"
#include "custom/cumsum/op.h"
#include "expect_error.h"
#include "luminal/reference.h"

namespace luminal {
namespace {

// Inclusive prefix sums of a [rows, len] row-major block along `axis`, in double.
std::vector<double> loops(const std::vector<double>& x, int64_t rows, int64_t len, int axis) {
  std::vector<double> out(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t l = 0; l < len; ++l) {
      const int64_t at = r * len + l;
      const int64_t prev = axis == 1 ? (l > 0 ? at - 1 : -1) : (r > 0 ? at - len : -1);
      out[size_t(at)] = x[size_t(at)] + (prev >= 0 ? out[size_t(prev)] : 0.0);
    }
  return out;
}

void set(Runtime& rt, const GraphTensor& t, const std::vector<double>& v) {
  switch (t.dtype) {
    case DType::I32: { std::vector<int32_t> h(v.begin(), v.end()); return rt.set_data(t, std::span<const int32_t>(h)); }
    case DType::I64: { std::vector<int64_t> h(v.begin(), v.end()); return rt.set_data(t, std::span<const int64_t>(h)); }
    case DType::F32: { std::vector<float> h(v.begin(), v.end()); return rt.set_data(t, std::span<const float>(h)); }
    default: return rt.set_data(t, std::span<const double>(v));
  }
}

std::vector<double> get(Runtime& rt, const GraphTensor& t) {
  const std::vector<std::byte> b = rt.get_bytes(t);
  std::vector<double> out;
  const size_t n = b.size() / dtype_size(t.dtype);
  for (size_t i = 0; i < n; ++i) {
    const std::byte* p = b.data() + i * dtype_size(t.dtype);
    switch (t.dtype) {
      case DType::I32: { int32_t v; std::memcpy(&v, p, 4); out.push_back(v); break; }
      case DType::I64: { int64_t v; std::memcpy(&v, p, 8); out.push_back(double(v)); break; }
      case DType::F32: { float v; std::memcpy(&v, p, 4); out.push_back(v); break; }
      default: { double v; std::memcpy(&v, p, 8); out.push_back(v); break; }
    }
  }
  return out;
}

TEST(CpuCumsum, SymbolicAndConcreteAxesMatchLoopsOnTheCpuAndTheReference) {
  for (DType dt : {DType::I32, DType::I64, DType::F32, DType::F64})
    for (int axis : {0, 1}) {
      Graph g;
      const GraphTensor x = g.named_tensor("x", {Expr(26), Expr::sym("b")}, dt);
      const GraphTensor y = custom::cumsum(x, axis).output();
      const auto cpu = cpu_test::cpu_plan(g);
      ReferenceRuntime ref(g);
      for (int64_t b : {7, 300, 1}) {  // the length changes between executes of one plan
        std::vector<double> v(size_t(26 * b));
        for (size_t i = 0; i < v.size(); ++i) v[i] = double(int64_t(i * 7919 % 13) - 4);  // exact in every dtype
        const std::vector<double> want = loops(v, 26, b, axis);
        for (Runtime* rt : {static_cast<Runtime*>(cpu.get()), static_cast<Runtime*>(&ref)}) {
          set(*rt, x, v);
          rt->execute({{"b", b}});
          EXPECT_EQ(get(*rt, y), want) << dtype_name(dt) << " axis " << axis << " b " << b
                                       << (rt == &ref ? " reference" : " cpu");
        }
      }
      EXPECT_NE(cpu->stats().steps.at(0).find("cumsum (host kernel)"), std::string::npos) << cpu->stats().steps.at(0);
    }
}

TEST(CpuCumsum, BadInputIsRefused) {
  Graph g;
  const GraphTensor x = g.named_tensor("x", {4, 5}, DType::BF16);
  test::expect_error([&] { custom::cumsum(x, 1); }, {"[cumsum] x is bf16"});
  test::expect_error([&] { custom::cumsum(g.named_tensor("y", {4, 5}), 2); }, {"[cumsum] axis 2 of [4, 5] does not exist"});
}

}  // namespace
}  // namespace luminal
