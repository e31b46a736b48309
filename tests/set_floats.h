// Binding float test data to a runtime input of any float dtype (each value rounded to it).
#pragma once

#include <span>
#include <vector>

#include "luminal/runtime.h"

namespace luminal::test {

/// v as t's dtype (F32, BF16 or F16).
inline void set_floats(Runtime& rt, const GraphTensor& t, const std::vector<float>& v) {
  if (t.dtype == DType::F32) return rt.set_data(t, std::span<const float>(v));
  if (t.dtype == DType::BF16) {
    std::vector<bf16> h(v.begin(), v.end());
    return rt.set_data(t, std::span<const bf16>(h));
  }
  std::vector<f16> h(v.begin(), v.end());
  rt.set_data(t, std::span<const f16>(h));
}

}  // namespace luminal::test
