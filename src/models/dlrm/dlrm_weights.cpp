// Loading a DLRM's fp32 weights file at the model's precision (host-side conversion and
// row-wise quantization of the tables).
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "custom/dlrm_sparse/op.h"
#include "luminal/models/dlrm.h"
#include "luminal/nn.h"
#include "luminal/runtime.h"
#include "luminal/safetensors.h"

namespace luminal::models {

namespace {

constexpr std::string_view kPadded = ".padded";

// True for a weight declared with zero columns appended (padded_weight_name).
bool is_padded(const GraphTensor& t) { return t.node().name.ends_with(kPadded); }

// The file tensor for graph weight t (same name, or the unpadded one), checked to be f32 of t's
// (constant) shape; a padded weight's file tensor has fewer columns (less than custom::kSparseColAlign fewer).
const SafeTensor& file_tensor(const SafetensorsFile& w, const GraphTensor& t) {
  std::string name = t.node().name;
  const bool padded = is_padded(t);
  if (padded) name.resize(name.size() - kPadded.size());
  const SafeTensor* f = w.find(name);
  if (!f) throw std::invalid_argument(fmt::format("[dlrm] {}: missing '{}'", w.path(), name));
  std::vector<int64_t> want;
  for (const Expr& e : t.dims()) want.push_back(e.as_const().value_or(-1));
  bool ok = f->dtype == DType::F32 && f->shape == want;
  if (padded) {
    ok = f->dtype == DType::F32 && f->shape.size() == 2 && f->shape[0] == want[0] &&
         f->shape[1] <= want[1] && f->shape[1] > want[1] - custom::kSparseColAlign;
    want[1] = (want[1] / custom::kSparseColAlign) * custom::kSparseColAlign;  // for the message only
  }
  if (!ok) {
    throw std::invalid_argument(fmt::format("[dlrm] {}: '{}' is {} [{}], expected f32 [{}]",
                                            w.path(), name, dtype_name(f->dtype),
                                            fmt::join(f->shape, ", "), fmt::join(want, ", ")));
  }
  return *f;
}

// The values of t from its file tensor, with zero columns appended when t is padded.
std::vector<float> floats(const SafeTensor& f, const GraphTensor& t) {
  std::vector<float> v(f.data.size() / sizeof(float));
  std::memcpy(v.data(), f.data.data(), v.size() * sizeof(float));
  if (!is_padded(t)) return v;
  const size_t rows = size_t(f.shape[0]), in = size_t(f.shape[1]);
  const size_t cols = size_t(t.dims()[1].as_const().value());
  std::vector<float> p(rows * cols, 0.f);
  for (size_t r = 0; r < rows; ++r) std::copy_n(v.begin() + r * in, in, p.begin() + r * cols);
  return p;
}

// Binds t (BF16 or F32 in the graph) from its f32 file tensor.
void bind_float(Runtime& rt, const GraphTensor& t, const SafeTensor& f) {
  const std::vector<float> v = floats(f, t);
  if (t.dtype == DType::F32) {
    rt.set_data(t, std::span<const float>(v));
    return;
  }
  std::vector<bf16> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = bf16(v[i]);
  rt.set_data(t, std::span<const bf16>(h));
}

}  // namespace

size_t load_dlrm_weights(Runtime& rt, const DlrmGraph& g, const DlrmConfig& c,
                         const SafetensorsFile& w) {
  const DlrmTensors& t = g.inputs;
  std::vector<GraphTensor> dense;  // every weight but Int8 tables
  for (const auto* v : {&t.bot_w, &t.bot_b, &t.cross_v, &t.cross_w, &t.cross_b, &t.top_w, &t.top_b})
    dense.insert(dense.end(), v->begin(), v->end());
  const bool int8 = int8_tables(c.precision);
  if (!int8) dense.insert(dense.end(), t.tables.begin(), t.tables.end());
  // Check everything before binding anything: a half-loaded model must not look usable.
  for (const GraphTensor& x : dense) file_tensor(w, x);
  for (const GraphTensor& x : t.tables) file_tensor(w, x);
  if (fp32_tensors(c.precision)) {
    // f32 as stored, straight from the mapping; padded weights (not in the file by that name) by hand.
    size_t n = load_safetensors(rt, w.path());
    for (const GraphTensor& x : dense) {
      if (is_padded(x)) bind_float(rt, x, file_tensor(w, x)), ++n;
    }
    return n;
  }
  for (const GraphTensor& x : dense) bind_float(rt, x, file_tensor(w, x));
  if (!int8) return dense.size();
  for (size_t k = 0; k < t.tables.size(); ++k) {
    const nn::RowwiseU8Table q =
        nn::quantize_rowwise_u8(floats(file_tensor(w, t.tables[k]), t.tables[k]), c.ln_emb[k], c.dim());
    rt.set_data(t.tables[k], std::span<const uint8_t>(q.codes));
    rt.set_data(t.scale_bias[k], std::span<const float>(q.scale_bias));
  }
  return dense.size() + t.tables.size();
}

}  // namespace luminal::models
