// The Cumsum kernel on the CUDA runtime (device machine only; outputs poisoned first): every dtype
// along a symbolic axis whose length changes between executes of one runtime (1 to 100,000: more
// than one element per thread), strided lines, against loops.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "custom/cumsum/op.h"
#include "gpu/gpu_test_util.h"
#include "luminal/compile.h"
#include "luminal/cuda.h"

namespace luminal {
namespace {

class CumsumGpu : public gpu_test::CudaTest {
 protected:
  void SetUp() override {
    gpu_test::CudaTest::SetUp();
    setenv("LUMINAL_CUDA_POISON", "1", 1);
  }
};

template <class T>
std::vector<std::byte> bytes_of(const std::vector<double>& v) {
  std::vector<T> t(v.begin(), v.end());
  std::vector<std::byte> b(t.size() * sizeof(T));
  std::memcpy(b.data(), t.data(), b.size());
  return b;
}

double at(const std::vector<std::byte>& b, DType dt, size_t i) {
  switch (dt) {
    case DType::I32: { int32_t v; std::memcpy(&v, b.data() + 4 * i, 4); return v; }
    case DType::I64: { int64_t v; std::memcpy(&v, b.data() + 8 * i, 8); return double(v); }
    case DType::F32: { float v; std::memcpy(&v, b.data() + 4 * i, 4); return v; }
    default: { double v; std::memcpy(&v, b.data() + 8 * i, 8); return v; }
  }
}

TEST_F(CumsumGpu, SymbolicAxisEveryDtypeAndLengthMatchesLoops) {
  for (DType dt : {DType::I32, DType::I64, DType::F32, DType::F64})
    for (int64_t inner : {1, 3}) {
      Graph g;
      const GraphTensor x = g.named_tensor("x", {Expr(26), Expr::sym("b"), Expr(inner)}, dt);
      const GraphTensor y = custom::cumsum(x, 1).output();
      Executable rt(g, cuda::backend());
      for (int64_t b : {7, 100000, 1, 2048}) {
        std::vector<double> v(size_t(26 * b * inner));
        for (size_t i = 0; i < v.size(); ++i) v[i] = double(int64_t(i * 7919 % 13) - 4);
        const std::vector<std::byte> in = dt == DType::I32   ? bytes_of<int32_t>(v)
                                          : dt == DType::I64 ? bytes_of<int64_t>(v)
                                          : dt == DType::F32 ? bytes_of<float>(v)
                                                             : bytes_of<double>(v);
        rt.set_bytes(x, in);
        rt.execute({{"b", b}});
        const std::vector<std::byte> out = rt.get_bytes(y);
        ASSERT_EQ(out.size(), in.size());
        for (int64_t o = 0; o < 26; ++o)
          for (int64_t i = 0; i < inner; ++i) {
            double acc = 0;
            for (int64_t l = 0; l < b; ++l) {
              const size_t k = size_t((o * b + l) * inner + i);
              acc += v[k];
              ASSERT_EQ(at(out, dt, k), acc) << dtype_name(dt) << " inner " << inner << " b " << b << " at " << k;
            }
          }
      }
      EXPECT_EQ(rt.kernel_count(), 1u) << "the scan kernel, not the O(len^2) decomposition";
    }
}

// inf and NaN as a sequential scan gives them: an inf in a segment does not turn the elements
// before it into NaN (one element per thread: the first element's segment holds the inf).
TEST_F(CumsumGpu, SpecialValuesAsASequentialScan) {
  Graph g;
  const GraphTensor x = g.named_tensor("x", {Expr(3), Expr::sym("b")}, DType::F32);
  const GraphTensor y = custom::cumsum(x, 1).output();
  Executable rt(g, cuda::backend());
  const float inf = INFINITY, nan = NAN;
  const std::vector<float> v{1, inf, 2, -inf, 3, -inf, 1, 1, 1, 1, nan, 1, 0, 1, 2};
  rt.set_data(x, std::span<const float>(v));
  rt.execute({{"b", 5}});
  const std::vector<float> got = rt.get_f32(y);
  const std::vector<float> want{1, inf, inf, nan, nan, -inf, -inf, -inf, -inf, -inf, nan, nan, nan, nan, nan};
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(std::isnan(want[i]) ? std::isnan(got[i]) : got[i] == want[i]) << i << ": " << got[i];
}

}  // namespace
}  // namespace luminal
