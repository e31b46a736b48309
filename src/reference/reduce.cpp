// Reference kernels for SumReduce and MaxReduce: out[i..., k...] = reduce_j in[i..., j, k...].
#include <fmt/format.h>

#include <cmath>
#include <stdexcept>

#include "reference/kernels.h"

namespace luminal::reference {

namespace {

// The input's dims are the output's with the reduced axis inserted; returns that axis' size.
int64_t check_reduce_dims(const KernelContext& k) {
  const std::vector<int64_t>& in_dims = k.in.at(0).view.dims;
  const int axis = k.node.axis;
  if (axis < 0 || axis >= static_cast<int>(in_dims.size())) {
    throw std::runtime_error(
        fmt::format("[cpu] {}: axis {} out of range for rank {}", k.where(), axis, in_dims.size()));
  }
  std::vector<int64_t> expect = k.out.dims;
  expect.insert(expect.begin() + axis, in_dims[axis]);
  k.expect_dims(0, expect);
  return in_dims[axis];
}

}  // namespace

void run_reduce(const KernelContext& k) {
  const int64_t len = check_reduce_dims(k);
  const bool is_max = k.node.kind == OpKind::MaxReduce;
  if (is_max && len == 0 && numel_of(k.out.dims) > 0) {
    throw std::runtime_error(fmt::format("[max_reduce] {}: reducing an empty axis", k.where()));
  }
  const Operand& a = k.in[0];
  const auto axis = static_cast<size_t>(k.node.axis);
  std::byte* out = k.out.bytes.data();
  const bool floats = is_float(a.dtype());
  std::vector<int64_t> src(k.out.dims.size() + 1, 0);

  for_each_index(k.out.dims, [&](std::span<const int64_t> idx, int64_t i) {
    // src = idx with the reduced coordinate inserted at axis.
    for (size_t d = 0, s = 0; d < src.size(); ++d) src[d] = d == axis ? 0 : idx[s++];
    if (floats) {
      double acc = is_max ? a.load_f(src) : 0.0;
      for (int64_t j = is_max ? 1 : 0; j < len; ++j) {
        src[axis] = j;
        const double v = a.load_f(src);
        if (!is_max) {
          acc += v;
        } else if (std::isnan(v) || v > acc) {
          acc = std::isnan(acc) ? acc : v;  // NaN propagates, like torch.max
        }
      }
      store_f64(out, k.out.dtype, i, acc);
    } else {
      int64_t acc = is_max ? a.load_i(src) : 0;
      for (int64_t j = is_max ? 1 : 0; j < len; ++j) {
        src[axis] = j;
        const int64_t v = a.load_i(src);
        acc = is_max ? std::max(acc, v) : static_cast<int64_t>(static_cast<uint64_t>(acc) + v);
      }
      store_i64(out, k.out.dtype, i, acc);
    }
  });
}

}  // namespace luminal::reference
