// Weights/constants payloads and the signature cross-check of a .pt2 archive.
#include "io/pt2/payload.h"

#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "io/pt2/program_json.h"

namespace luminal::io::pt2 {

using nlohmann::json;

namespace {

/// Concrete, non-negative ints of a layout field, or an error naming the tensor.
std::vector<int64_t> concrete(const ZipReader& zip, const std::vector<Pt2SymInt>& v,
                              const std::string& what, const std::string& name) {
  std::vector<int64_t> out;
  for (const Pt2SymInt& s : v) {
    if (s.is_symbolic())
      zip.fail(fmt::format("tensor '{}': symbolic {} '{}' in stored data", name, what, s.str()));
    if (s.value < 0) zip.fail(fmt::format("tensor '{}': negative {} {}", name, what, s.value));
    out.push_back(s.value);
  }
  return out;
}

/// Byte count the strided view reaches into its storage: (offset + sum (size-1)*stride + 1) * es.
bool extent_bytes(const Pt2Tensor& t, uint64_t& out) {
  uint64_t last = static_cast<uint64_t>(t.storage_offset);
  for (size_t k = 0; k < t.shape.size(); ++k) {
    if (t.shape[k] == 0) return out = 0, true;
    uint64_t step = 0;
    if (__builtin_mul_overflow(static_cast<uint64_t>(t.shape[k] - 1),
                               static_cast<uint64_t>(t.strides[k]), &step) ||
        __builtin_add_overflow(last, step, &last))
      return false;
  }
  return !__builtin_add_overflow(last, uint64_t{1}, &last) &&
         !__builtin_mul_overflow(last, static_cast<uint64_t>(dtype_size(t.dtype)), &out);
}

}  // namespace

std::vector<Pt2Tensor> PayloadLoader::load(const std::string& dir, const std::string& model,
                                           const std::string& kind) const {
  const std::string config_file = model + "_" + kind + "_config.json";
  const std::string cfg_name = prefix + dir + config_file;
  if (!zip.find(cfg_name)) {
    if (zip.find(prefix + dir + model + ".pt"))
      zip.fail(
          fmt::format("{}: legacy pickled weights (written by torch < 2.6) are not supported; "
                      "re-export with a newer torch.export.save",
                      dir));
    return {};
  }
  const ZipBytes cfg_bytes = zip.read(cfg_name);
  const char* first = reinterpret_cast<const char*>(cfg_bytes.data.data());
  json cfg;
  try {
    cfg = json::parse(first, first + cfg_bytes.data.size());
  } catch (const json::exception& e) {
    zip.fail(fmt::format("{}{}: invalid JSON: {}", dir, config_file, e.what()));
  }
  std::vector<Pt2Tensor> out;
  std::map<std::string, ZipBytes> storages;  // path_name -> bytes, read (and CRC-checked) once
  try {
    const json& config = member(cfg, "config", dir + config_file);
    if (!config.is_object()) bad_json(dir + config_file, "'config' must be an object");
    for (const auto& [fqn, meta] : config.items()) {
      const std::string w = fmt::format("{}{}: '{}'", dir, config_file, fqn);
      if (as_bool(member(meta, "use_pickle", w), w + ".use_pickle"))
        zip.fail(
            fmt::format("tensor '{}' is pickled (a tensor subclass or custom object); only "
                        "raw tensors are supported",
                        fqn));
      Pt2Tensor t;
      t.name = fqn;
      t.is_param = as_bool(member(meta, "is_param", w), w + ".is_param");
      const Pt2TensorMeta tm =
          parse_tensor_meta(member(meta, "tensor_meta", w), w + ".tensor_meta");
      if (!tm.dtype)
        zip.fail(fmt::format("tensor '{}': dtype {} is not supported", fqn,
                             torch_scalar_type_name(tm.scalar_type)));
      t.dtype = *tm.dtype;
      t.shape = concrete(zip, tm.sizes, "size", fqn);
      t.strides = concrete(zip, tm.strides, "stride", fqn);
      t.storage_offset = concrete(zip, {tm.storage_offset}, "storage offset", fqn)[0];
      const std::string file = as_str(member(meta, "path_name", w), w + ".path_name");
      auto it = storages.find(file);
      if (it == storages.end()) {
        if (!zip.find(prefix + dir + file))
          zip.fail(fmt::format("tensor '{}': storage entry '{}{}' is missing", fqn, dir, file));
        it = storages.emplace(file, zip.read(prefix + dir + file)).first;
        if (!it->second.mapped()) held.push_back(it->second);
      }
      t.storage = it->second.data;
      t.mapped = it->second.mapped();
      uint64_t need = 0;
      const std::string desc =
          fmt::format("{} {} strides [{}] offset {}", dtype_name(t.dtype), fmt::join(t.shape, "x"),
                      fmt::join(t.strides, ", "), t.storage_offset);
      if (t.storage.size() % dtype_size(t.dtype) != 0)
        zip.fail(fmt::format("tensor '{}' ({}): storage '{}' holds {} bytes, not a multiple of {}",
                             fqn, desc, file, t.storage.size(), dtype_size(t.dtype)));
      if (!extent_bytes(t, need) || need > t.storage.size())
        zip.fail(fmt::format("tensor '{}' ({}): needs {} bytes but storage '{}' holds {}", fqn,
                             desc, need, file, t.storage.size()));
      out.push_back(std::move(t));
    }
  } catch (const std::runtime_error& e) {
    if (std::string_view(e.what()).rfind("[pt2]", 0) == 0) throw;
    zip.fail(e.what());
  }
  return out;
}

std::string signature_problem(const Pt2Archive& a) {
  const Pt2Program& p = a.program();
  for (const Pt2InputSpec& s : p.input_specs) {
    const bool lifted = s.kind == Pt2InputKind::Parameter || s.kind == Pt2InputKind::Buffer ||
                        s.kind == Pt2InputKind::TensorConstant;
    if (!lifted) continue;
    const Pt2Tensor* t = a.find_tensor(s.target);
    if (!t)
      return fmt::format("'{}' (graph input '{}') has no stored data in the weights or "
                      "constants config",
                      s.target, s.name);
    auto meta = p.graph.tensor_values.find(s.name);
    if (meta == p.graph.tensor_values.end()) continue;
    const Pt2TensorMeta& m = meta->second;
    if (m.dtype != t->dtype)
      return fmt::format("'{}': stored as {} but the graph expects {}", s.target,
                         dtype_name(t->dtype), torch_scalar_type_name(m.scalar_type));
    bool same = m.sizes.size() == t->shape.size();
    for (size_t k = 0; same && k < t->shape.size(); ++k)
      same = !m.sizes[k].is_symbolic() && m.sizes[k].value == t->shape[k];
    if (!same) {
      std::vector<std::string> g;
      for (const Pt2SymInt& d : m.sizes) g.push_back(d.str());
      return fmt::format("'{}': stored shape [{}] but the graph expects [{}]", s.target,
                         fmt::join(t->shape, ", "), fmt::join(g, ", "));
    }
  }
  return "";
}

}  // namespace luminal::io::pt2
