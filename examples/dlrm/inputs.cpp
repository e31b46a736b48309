// Loading and validating the dlrm example's inputs file.
#include "inputs.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "luminal/safetensors.h"
#include "luminal/models/dlrm.h"

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

// PyTorch EmbeddingBag offsets: one bag start per batch row, starting at 0, never decreasing,
// never past the indices (the last bag ends at nnz; empty bags are allowed).
std::vector<int64_t> read_offsets(const std::string& path, const SafeTensor& t, int64_t batch,
                                  size_t nnz) {
  std::vector<int64_t> off = read_ints(path, t);
  if (static_cast<int64_t>(off.size()) != batch) {
    fail(path, fmt::format("'{}' has {} elements, expected {} (one bag start per batch row)",
                           t.name, off.size(), batch));
  }
  if (off[0] != 0)
    fail(path,
         fmt::format("{}[0] = {}, expected 0 (the first bag starts at index 0)", t.name, off[0]));
  for (size_t b = 1; b < off.size(); ++b) {
    if (off[b] < off[b - 1]) {
      fail(path, fmt::format("{}[{}] = {} < {}[{}] = {}: offsets must not decrease", t.name, b,
                             off[b], t.name, b - 1, off[b - 1]));
    }
  }
  if (off.back() > static_cast<int64_t>(nnz)) {
    fail(path, fmt::format("{}[{}] = {} runs past the {} indices of 'indices_{}'", t.name,
                           off.size() - 1, off.back(), nnz, t.name.substr(t.name.find('_') + 1)));
  }
  return off;
}

// A KeyedJaggedTensor file's feature keys (from its lengths_<key> tensors), ordered by numeric
// suffix (cat_2 before cat_10), then name: the order of torchrec's tables t_<key>.
std::vector<std::string> kjt_keys(const SafetensorsFile& f) {
  std::vector<std::string> keys;
  for (const SafeTensor& t : f.tensors())
    if (t.name.starts_with("lengths_")) keys.push_back(t.name.substr(8));
  luminal::models::sort_by_numeric_suffix(keys);
  return keys;
}

// Bag starts from bag lengths (KJT's lengths_<key>): each length >= 0, summing to len(values).
std::vector<int64_t> offsets_of_lengths(const std::string& path, const SafeTensor& t, int64_t batch,
                                        size_t nnz) {
  const std::vector<int64_t> len = read_ints(path, t);
  if (static_cast<int64_t>(len.size()) != batch)
    fail(path, fmt::format("'{}' has {} elements, expected {} (one bag length per sample)", t.name,
                           len.size(), batch));
  std::vector<int64_t> off(len.size());
  int64_t at = 0;
  for (size_t b = 0; b < len.size(); ++b) {
    if (len[b] < 0) fail(path, fmt::format("{}[{}] = {}: lengths must not be negative", t.name, b, len[b]));
    off[b] = at;
    at += len[b];
  }
  if (at != static_cast<int64_t>(nnz))
    fail(path, fmt::format("'{}' sums to {}, but 'values_{}' has {} values", t.name, at, t.name.substr(8), nnz));
  return off;
}

// The KJT layout: dense_features, then per key values_<key> and lengths_<key>.
void load_kjt(const SafetensorsFile& f, DlrmInputs& in) {
  in.feature_keys = kjt_keys(f);
  if (in.feature_keys.empty()) fail(in.path, "has 'dense_features' but no 'lengths_<key>' tensors");
  for (const std::string& key : in.feature_keys) {
    const SafeTensor* v = f.find("values_" + key);
    if (!v) fail(in.path, fmt::format("has 'lengths_{}' but no 'values_{}'", key, key));
    if (in.indices.empty()) in.file_index_dtype = v->dtype;
    in.indices.push_back(read_ints(in.path, *v));
    in.offsets.push_back(offsets_of_lengths(in.path, f.at("lengths_" + key), in.batch, in.indices.back().size()));
  }
}

}  // namespace

std::vector<int64_t> uniform_offsets(int64_t batch, int64_t bag) {
  std::vector<int64_t> off(static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) off[b] = b * bag;
  return off;
}

void detect_uniform_bags(DlrmInputs& in) {
  in.uniform_bag.reset();
  if (in.indices.empty() || in.indices[0].empty() || in.indices[0].size() % in.batch != 0) return;
  const int64_t bag = static_cast<int64_t>(in.indices[0].size()) / in.batch;
  for (size_t k = 0; k < in.indices.size(); ++k) {
    if (static_cast<int64_t>(in.indices[k].size()) != in.batch * bag) return;
    if (in.offsets[k] != uniform_offsets(in.batch, bag)) return;
  }
  in.uniform_bag = bag;
}

static void load_indexed(const SafetensorsFile& f, DlrmInputs& in);

DlrmInputs load_inputs(const SafetensorsFile& f) {
  DlrmInputs in;
  in.path = f.path();
  const bool kjt = f.find("dense_x") == nullptr && f.find("dense_features") != nullptr;
  const char* dense_name = kjt ? "dense_features" : "dense_x";
  const SafeTensor* dense = f.find(dense_name);
  if (!dense) fail(in.path, "missing 'dense_x' (or 'dense_features' with KJT-layout bags)");
  if (dense->shape.size() != 2 || dense->shape[0] <= 0) {
    fail(in.path,
         fmt::format("'{}' has shape {}, expected [batch, n_dense]", dense_name, shape_of(*dense)));
  }
  in.dense_x = read_f32(in.path, *dense);
  in.batch = dense->shape[0];
  in.dense_width = dense->shape[1];
  if (kjt) {
    load_kjt(f, in);
  } else {
    load_indexed(f, in);
  }
  detect_uniform_bags(in);
  if (const SafeTensor* e = f.find("expected")) {
    if (e->shape != std::vector<int64_t>{in.batch, 1}) {
      fail(in.path,
           fmt::format("'expected' has shape {}, expected [{}, 1]", shape_of(*e), in.batch));
    }
    in.expected = read_f32(in.path, *e);
  }
  return in;
}

// export.py's layout: indices_k, optional offsets_k.
static void load_indexed(const SafetensorsFile& f, DlrmInputs& in) {
  const SafeTensor* first = f.find("indices_0");
  if (!first) fail(in.path, "missing 'indices_0'");
  in.file_index_dtype = first->dtype;
  for (int k = 0;; ++k) {
    const SafeTensor* t = f.find(fmt::format("indices_{}", k));
    if (!t) break;
    in.indices.push_back(read_ints(in.path, *t));
    const size_t nnz = in.indices.back().size();
    if (const SafeTensor* off = f.find(fmt::format("offsets_{}", k))) {
      in.offsets.push_back(read_offsets(in.path, *off, in.batch, nnz));
    } else if (nnz > 0 && nnz % in.batch == 0) {
      in.offsets.push_back(uniform_offsets(in.batch, static_cast<int64_t>(nnz) / in.batch));
    } else {
      fail(in.path,
           fmt::format("'indices_{}' has {} elements and no 'offsets_{}': without offsets the "
                       "bags are uniform, so it must be a positive multiple of batch {}",
                       k, nnz, k, in.batch));
    }
  }
}

// The values as i32, or "[dlrm] ..." when one does not fit.
std::vector<int32_t> narrow(const std::string& path, const std::vector<int64_t>& v,
                            const std::string& what) {
  for (int64_t x : v) {
    if (x > INT32_MAX) fail(path, fmt::format("'{}' holds {}, too large for i32 indices", what, x));
  }
  return {v.begin(), v.end()};
}
// The file's name for table k's indices: values_<key> (KJT layout; the table's key when the file
// lacks it) or indices_<k>.
static std::string indices_name(const DlrmInputs& in, const luminal::models::DlrmConfig& c, size_t k) {
  if (in.feature_keys.empty()) return fmt::format("indices_{}", k);
  if (k < in.feature_keys.size()) return "values_" + in.feature_keys[k];
  if (k < c.table_names.size() && c.table_names[k].rfind("t_", 0) == 0) return "values_" + c.table_names[k].substr(2);
  return fmt::format("values_<key of table {}>", k);
}


void prepare(DlrmInputs& in, const luminal::models::DlrmConfig& c) {
  if (in.dense_width != c.ln_bot[0]) {
    fail(in.path,
         fmt::format(
             "'dense_x' has {} columns, but the bottom MLP takes {} (bot_l.0.weight is [{}, {}])",
             in.dense_width, c.ln_bot[0], c.ln_bot[1], c.ln_bot[0]));
  }
  const size_t tables = static_cast<size_t>(c.num_tables());
  for (size_t k = 0; k < in.feature_keys.size() && k < c.table_names.size(); ++k) {
    if (c.table_names[k] != "t_" + in.feature_keys[k])  // torchrec's DLRM-v2 naming: table t_<key>
      fail(in.path, fmt::format("feature {} is '{}', but table {} is '{}' (expected 't_{}')", k,
                                in.feature_keys[k], k, c.table_names[k], in.feature_keys[k]));
  }
  if (in.indices.size() < tables) {
    const std::string name = indices_name(in, c, in.indices.size());
    const std::string lengths = in.feature_keys.empty() ? "" : fmt::format(" and 'lengths_{}'", name.substr(7));
    fail(in.path, fmt::format("missing '{}'{} (the weights have {} tables)", name, lengths, tables));
  }
  if (in.indices.size() > tables) {
    fail(in.path, fmt::format("has '{}' but the weights have only {} tables", indices_name(in, c, tables), tables));
  }
  if (!c.jagged && in.uniform_bag != c.bag) {
    fail(in.path,
         fmt::format("the model was built for uniform bags of {}, the file's bags are {}", c.bag,
                     in.uniform_bag ? fmt::format("uniform of {}", *in.uniform_bag) : "jagged"));
  }
  in.indices_i32.clear();
  in.offsets_i32.clear();
  for (size_t k = 0; k < tables; ++k) {
    const std::vector<int64_t>& idx = in.indices[k];
    // Checked on the host before upload: a bad index must be an error, never an out-of-bounds read.
    for (size_t i = 0; i < idx.size(); ++i) {
      if (idx[i] < 0 || idx[i] >= c.ln_emb[k]) {
        fail(in.path,
             fmt::format("{}[{}] = {} out of range [0, {})", indices_name(in, c, k), i, idx[i], c.ln_emb[k]));
      }
    }
    if (c.index_dtype == DType::I32) {
      in.indices_i32.push_back(narrow(in.path, idx, indices_name(in, c, k)));
      in.offsets_i32.push_back(narrow(in.path, in.offsets[k], fmt::format("offsets_{}", k)));
    }
  }
}

void bind_inputs(luminal::Runtime& rt, const luminal::models::DlrmGraph& g, const DlrmInputs& in) {
  rt.set_data(g.dense_x, std::span<const float>(in.dense_x));
  const bool i32 = !g.indices.empty() && g.indices[0].dtype == DType::I32;
  for (size_t k = 0; k < g.indices.size(); ++k) {
    if (i32) {
      rt.set_data(g.indices[k], std::span<const int32_t>(in.indices_i32.at(k)));
    } else {
      rt.set_data(g.indices[k], std::span<const int64_t>(in.indices.at(k)));
    }
  }
  for (size_t k = 0; k < g.offsets.size(); ++k) {
    if (i32) {
      rt.set_data(g.offsets[k], std::span<const int32_t>(in.offsets_i32.at(k)));
    } else {
      rt.set_data(g.offsets[k], std::span<const int64_t>(in.offsets.at(k)));
    }
  }
}

void bind_inputs_pinned(luminal::Executable& rt, const luminal::models::DlrmGraph& g,
                        const DlrmInputs& in, bool write) {
  const auto put = [&](const luminal::GraphTensor& t, const auto& v) {
    const size_t bytes = v.size() * sizeof(v[0]);
    const std::span<std::byte> slot = rt.host_input(t, bytes);
    if (write) std::memcpy(slot.data(), v.data(), bytes);
  };
  put(g.dense_x, in.dense_x);
  const bool i32 = !g.indices.empty() && g.indices[0].dtype == DType::I32;
  for (size_t k = 0; k < g.indices.size(); ++k) {
    if (i32) put(g.indices[k], in.indices_i32.at(k)); else put(g.indices[k], in.indices.at(k));
  }
  for (size_t k = 0; k < g.offsets.size(); ++k) {
    if (i32) put(g.offsets[k], in.offsets_i32.at(k)); else put(g.offsets[k], in.offsets.at(k));
  }
}

DlrmInputs take_batch(const DlrmInputs& in, int64_t batch) {
  if (batch < 1 || batch > in.batch)
    fail(in.path, fmt::format("cannot take {} samples: the file has {}", batch, in.batch));
  DlrmInputs out;
  out.path = in.path;
  out.batch = batch;
  out.dense_width = in.dense_width;
  out.uniform_bag = in.uniform_bag;  // a prefix of uniform bags is uniform
  out.file_index_dtype = in.file_index_dtype;
  out.dense_x.assign(in.dense_x.begin(), in.dense_x.begin() + batch * in.dense_width);
  for (size_t k = 0; k < in.indices.size(); ++k) {
    const std::vector<int64_t>& off = in.offsets[k];
    // Sample `batch`'s bag starts where the first `batch` bags end.
    const int64_t end = batch < in.batch ? off[size_t(batch)] : int64_t(in.indices[k].size());
    out.offsets.emplace_back(off.begin(), off.begin() + batch);
    out.indices.emplace_back(in.indices[k].begin(), in.indices[k].begin() + end);
  }
  if (in.expected)
    out.expected = std::vector<float>(in.expected->begin(), in.expected->begin() + batch);
  return out;
}

luminal::DynMap dyn_dims(const luminal::models::DlrmConfig& c, const DlrmInputs& in) {
  luminal::DynMap dyn;
  if (c.dynamic_batch) dyn[c.batch_symbol] = in.batch;
  if (!c.jagged) return dyn;
  for (size_t k = 0; k < in.indices.size(); ++k) {
    dyn[luminal::models::DlrmConfig::nnz_name(static_cast<int64_t>(k))] =
        static_cast<int64_t>(in.indices[k].size());
  }
  return dyn;
}

}  // namespace dlrm
