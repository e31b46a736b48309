// Loading and validating the dlrm example's inputs file.
#include "inputs.h"

#include <cmath>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "luminal/safetensors.h"

namespace dlrm {

using luminal::DType;
using luminal::SafeTensor;
using luminal::SafetensorsFile;

namespace {

[[noreturn]] void fail(const std::string& path, const std::string& msg) {
  throw std::invalid_argument(fmt::format("[dlrm] {}: {}", path, msg));
}

std::string shape_of(const SafeTensor& t) { return fmt::format("[{}]", fmt::join(t.shape, ", ")); }

// Integer tensor values widened to i64 (the file may hold i32 or i64).
std::vector<int64_t> read_ints(const std::string& path, const SafeTensor& t) {
  if (t.dtype != DType::I32 && t.dtype != DType::I64) {
    fail(path,
         fmt::format("'{}' is {}, expected i32 or i64", t.name, luminal::dtype_name(t.dtype)));
  }
  if (t.shape.size() != 1)
    fail(path, fmt::format("'{}' has shape {}, expected 1-D", t.name, shape_of(t)));
  const size_t n = static_cast<size_t>(t.shape[0]);
  std::vector<int64_t> v(n);
  for (size_t i = 0; i < n; ++i) {
    if (t.dtype == DType::I32) {
      int32_t x;
      std::memcpy(&x, t.data.data() + 4 * i, 4);
      v[i] = x;
    } else {
      std::memcpy(&v[i], t.data.data() + 8 * i, 8);
    }
  }
  return v;
}

std::vector<float> read_f32(const std::string& path, const SafeTensor& t) {
  if (t.dtype != DType::F32) {
    fail(path, fmt::format("'{}' is {}, expected f32", t.name, luminal::dtype_name(t.dtype)));
  }
  std::vector<float> v(t.data.size() / 4);
  std::memcpy(v.data(), t.data.data(), v.size() * 4);
  return v;
}

// offsets_k must describe uniform bags: offsets[b] == b * bag (export.py writes exactly that).
void check_offsets(const std::string& path, const SafeTensor& t, int64_t batch, int64_t bag) {
  const std::vector<int64_t> off = read_ints(path, t);
  if (static_cast<int64_t>(off.size()) != batch) {
    fail(path, fmt::format("'{}' has {} elements, expected {} (one per batch row)", t.name,
                           off.size(), batch));
  }
  for (int64_t b = 0; b < batch; ++b) {
    if (off[b] != b * bag) {
      fail(path, fmt::format("{}[{}] = {}, expected {}: only uniform bags of {} are supported "
                             "(offsets[b] == b * {})",
                             t.name, b, off[b], b * bag, bag, bag));
    }
  }
}

}  // namespace

DlrmInputs load_inputs(const SafetensorsFile& f) {
  DlrmInputs in;
  in.path = f.path();
  const SafeTensor* dense = f.find("dense_x");
  if (!dense) fail(in.path, "missing 'dense_x'");
  if (dense->shape.size() != 2 || dense->shape[0] <= 0) {
    fail(in.path,
         fmt::format("'dense_x' has shape {}, expected [batch, n_dense]", shape_of(*dense)));
  }
  in.dense_x = read_f32(in.path, *dense);
  in.batch = dense->shape[0];
  in.dense_width = dense->shape[1];

  const SafeTensor* first = f.find("indices_0");
  if (!first) fail(in.path, "missing 'indices_0'");
  in.file_index_dtype = first->dtype;
  for (int k = 0;; ++k) {
    const SafeTensor* t = f.find(fmt::format("indices_{}", k));
    if (!t) break;
    in.indices.push_back(read_ints(in.path, *t));
  }
  const int64_t n0 = static_cast<int64_t>(in.indices[0].size());
  if (n0 == 0 || n0 % in.batch != 0) {
    fail(in.path,
         fmt::format(
             "'indices_0' has {} elements, not a positive multiple of batch {} (dense_x rows)", n0,
             in.batch));
  }
  in.bag = n0 / in.batch;
  for (size_t k = 0; k < in.indices.size(); ++k) {
    if (const SafeTensor* off = f.find(fmt::format("offsets_{}", k)))
      check_offsets(in.path, *off, in.batch, in.bag);
  }
  if (const SafeTensor* e = f.find("expected")) {
    if (e->shape != std::vector<int64_t>{in.batch, 1}) {
      fail(in.path,
           fmt::format("'expected' has shape {}, expected [{}, 1]", shape_of(*e), in.batch));
    }
    in.expected = read_f32(in.path, *e);
  }
  return in;
}

void prepare(DlrmInputs& in, const luminal::nn::DlrmConfig& c) {
  if (in.dense_width != c.ln_bot[0]) {
    fail(in.path,
         fmt::format(
             "'dense_x' has {} columns, but the bottom MLP takes {} (bot_l.0.weight is [{}, {}])",
             in.dense_width, c.ln_bot[0], c.ln_bot[1], c.ln_bot[0]));
  }
  const size_t tables = static_cast<size_t>(c.num_tables());
  if (in.indices.size() < tables) {
    fail(in.path, fmt::format("missing 'indices_{}' (the weights have {} tables)",
                              in.indices.size(), tables));
  }
  if (in.indices.size() > tables) {
    fail(in.path,
         fmt::format("has 'indices_{}' but the weights have only {} tables", tables, tables));
  }
  const int64_t want = c.batch * c.bag;
  in.indices_i32.clear();
  for (size_t k = 0; k < tables; ++k) {
    const std::vector<int64_t>& idx = in.indices[k];
    if (static_cast<int64_t>(idx.size()) != want) {
      fail(in.path, fmt::format("'indices_{}' has {} elements, expected {} (batch {} x bag {})", k,
                                idx.size(), want, c.batch, c.bag));
    }
    // Checked on the host before upload: a bad index must be an error, never an out-of-bounds read.
    for (size_t i = 0; i < idx.size(); ++i) {
      if (idx[i] < 0 || idx[i] >= c.ln_emb[k]) {
        fail(in.path,
             fmt::format("indices_{}[{}] = {} out of range [0, {})", k, i, idx[i], c.ln_emb[k]));
      }
    }
    if (c.index_dtype == DType::I32) in.indices_i32.emplace_back(idx.begin(), idx.end());
  }
}

void bind_inputs(luminal::Runtime& rt, const luminal::nn::DlrmGraph& g, const DlrmInputs& in) {
  rt.set_data(g.dense_x, std::span<const float>(in.dense_x));
  for (size_t k = 0; k < g.indices.size(); ++k) {
    if (g.indices[k].dtype == DType::I32) {
      rt.set_data(g.indices[k], std::span<const int32_t>(in.indices_i32.at(k)));
    } else {
      rt.set_data(g.indices[k], std::span<const int64_t>(in.indices.at(k)));
    }
  }
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) {
    throw std::invalid_argument(
        fmt::format("[dlrm] comparing {} values with {}", a.size(), b.size()));
  }
  double m = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = std::fabs(static_cast<double>(a[i]) - static_cast<double>(b[i]));
    if (std::isnan(d)) return d;
    m = std::max(m, d);
  }
  return m;
}

}  // namespace dlrm
