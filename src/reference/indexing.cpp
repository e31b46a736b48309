// Reference kernels for Gather and Scatter along axis 0.
//   Gather:  out[i..., j...] = data[idx[i...], j...]
//   Scatter: out = dest; out[idx[i...], j...] = src[i..., j...] (row-major order: the last write
//   wins)
#include <fmt/format.h>

#include <stdexcept>

#include "reference/kernels.h"

namespace luminal::reference {

namespace {

void check_index_dtype(const KernelContext& k, const char* op, const Operand& idx) {
  if (idx.dtype() != DType::I32 && idx.dtype() != DType::I64) {
    throw std::runtime_error(fmt::format("[{}] index dtype must be i32 or i64, got {} ({})", op,
                                         dtype_name(idx.dtype()), k.where()));
  }
}

// Throws "[gather] index 12 out of range [0, 10) (node 7 reading input 'indices_0')".
void check_row(const KernelContext& k, const char* op, int64_t row, int64_t rows) {
  if (row >= 0 && row < rows) return;
  const Node& src = k.graph.node(k.in[1].producer);
  const std::string where = src.kind == OpKind::Input
                                ? fmt::format("node {} reading input '{}'", k.id, src.name)
                                : fmt::format("node {}", k.id);
  throw BadInputError(
      fmt::format("[{}] index {} out of range [0, {}) ({})", op, row, rows, where));
}

// dims = head ++ tail[1:].
std::vector<int64_t> joined(const std::vector<int64_t>& head, const std::vector<int64_t>& tail) {
  std::vector<int64_t> d = head;
  d.insert(d.end(), tail.begin() + 1, tail.end());
  return d;
}

}  // namespace

void run_gather(const KernelContext& k) {
  const Operand &data = k.in.at(0), &idx = k.in.at(1);
  check_index_dtype(k, "gather", idx);
  if (data.view.dims.empty())
    throw std::runtime_error(fmt::format("[gather] {}: scalar data", k.where()));
  if (joined(idx.view.dims, data.view.dims) != k.out.dims || data.dtype() != k.out.dtype) {
    throw std::runtime_error(
        fmt::format("[cpu] {}: output {} {} does not match data {} and index {}", k.where(),
                    dims_string(k.out.dims), dtype_name(k.out.dtype), dims_string(data.view.dims),
                    dims_string(idx.view.dims)));
  }
  const size_t k_rank = idx.view.dims.size();
  const auto size = static_cast<int64_t>(dtype_size(k.out.dtype));
  std::byte* out = k.out.bytes.data();
  std::vector<int64_t> src(data.view.dims.size(), 0);
  for_each_index(k.out.dims, [&](std::span<const int64_t> o, int64_t i) {
    const int64_t row = idx.load_i(o.first(k_rank));
    check_row(k, "gather", row, data.view.dims[0]);
    src[0] = row;
    for (size_t d = 1; d < src.size(); ++d) src[d] = o[k_rank + d - 1];
    data.copy_element(src, out + i * size);
  });
}

void run_scatter(const KernelContext& k) {
  const Operand &dest = k.in.at(0), &idx = k.in.at(1), &src = k.in.at(2);
  check_index_dtype(k, "scatter", idx);
  if (k.out.dims.empty())
    throw std::runtime_error(fmt::format("[scatter] {}: scalar dest", k.where()));
  k.expect_dims(0, k.out.dims);
  k.expect_dims(2, joined(idx.view.dims, k.out.dims));
  if (dest.dtype() != k.out.dtype || src.dtype() != k.out.dtype) {
    throw std::runtime_error(fmt::format("[scatter] dtype mismatch: dest {}, src {} ({})",
                                         dtype_name(dest.dtype()), dtype_name(src.dtype()),
                                         k.where()));
  }
  const auto size = static_cast<int64_t>(dtype_size(k.out.dtype));
  std::byte* out = k.out.bytes.data();
  if (!k.dest_in_out) {
    for_each_index(k.out.dims, [&](std::span<const int64_t> o, int64_t i) {
      dest.copy_element(o, out + i * size);
    });
  }

  const std::vector<int64_t> row_dims(k.out.dims.begin() + 1, k.out.dims.end());
  const int64_t row_len = numel_of(row_dims);
  std::vector<int64_t> s(src.view.dims.size(), 0);
  for_each_index(idx.view.dims, [&](std::span<const int64_t> n, int64_t) {
    const int64_t row = idx.load_i(n);
    check_row(k, "scatter", row, k.out.dims[0]);
    std::copy(n.begin(), n.end(), s.begin());
    for_each_index(row_dims, [&](std::span<const int64_t> j, int64_t jf) {
      std::copy(j.begin(), j.end(), s.begin() + static_cast<int64_t>(n.size()));
      src.copy_element(s, out + (row * row_len + jf) * size);
    });
  });
}

}  // namespace luminal::reference
