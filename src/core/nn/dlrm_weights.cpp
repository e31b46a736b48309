// Loading a DLRM's fp32 weights file at the model's precision (host-side conversion and
// row-wise quantization of the tables).
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "luminal/nn.h"
#include "luminal/runtime.h"
#include "luminal/safetensors.h"

namespace luminal::nn {

namespace {

// The file tensor for graph weight t (same name), checked to be f32 of t's (constant) shape.
const SafeTensor& file_tensor(const SafetensorsFile& w, const GraphTensor& t) {
  const std::string& name = t.node().name;
  const SafeTensor* f = w.find(name);
  if (!f) throw std::invalid_argument(fmt::format("[dlrm] {}: missing '{}'", w.path(), name));
  std::vector<int64_t> want;
  for (const Expr& e : t.dims()) want.push_back(e.as_const().value_or(-1));
  if (f->dtype != DType::F32 || f->shape != want) {
    throw std::invalid_argument(fmt::format("[dlrm] {}: '{}' is {} [{}], expected f32 [{}]",
                                            w.path(), name, dtype_name(f->dtype),
                                            fmt::join(f->shape, ", "), fmt::join(want, ", ")));
  }
  return *f;
}

std::vector<float> floats(const SafeTensor& f) {
  std::vector<float> v(f.data.size() / sizeof(float));
  std::memcpy(v.data(), f.data.data(), v.size() * sizeof(float));
  return v;
}

// Binds t (BF16 or F32 in the graph) from its f32 file tensor.
void bind_float(Runtime& rt, const GraphTensor& t, const SafeTensor& f) {
  const std::vector<float> v = floats(f);
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
  for (const auto* v : {&t.bot_w, &t.bot_b, &t.top_w, &t.top_b})
    dense.insert(dense.end(), v->begin(), v->end());
  const bool int8 = c.precision == Precision::Int8;
  if (!int8) dense.insert(dense.end(), t.tables.begin(), t.tables.end());
  // Check everything before binding anything: a half-loaded model must not look usable.
  for (const GraphTensor& x : dense) file_tensor(w, x);
  for (const GraphTensor& x : t.tables) file_tensor(w, x);
  if (c.precision == Precision::F32 || c.precision == Precision::TF32) {
    return rt.load_safetensors(w.path());  // f32 as stored: straight from the mapping
  }
  for (const GraphTensor& x : dense) bind_float(rt, x, file_tensor(w, x));
  if (!int8) return dense.size();
  for (size_t k = 0; k < t.tables.size(); ++k) {
    const RowwiseU8Table q =
        quantize_rowwise_u8(floats(file_tensor(w, t.tables[k])), c.ln_emb[k], c.dim());
    rt.set_data(t.tables[k], std::span<const uint8_t>(q.codes));
    rt.set_data(t.scale_bias[k], std::span<const float>(q.scale_bias));
  }
  return dense.size() + t.tables.size();
}

}  // namespace luminal::nn
