// load_safetensors: binds a checkpoint's tensors to a runtime's Inputs by name, all or nothing.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <stdexcept>

#include "io/float_convert.h"
#include "io/load_progress.h"
#include "luminal/runtime.h"
#include "luminal/safetensors.h"

namespace luminal {

namespace {

// The LoadItem for checkpoint tensor st bound for input id, or an error naming the tensor.
LoadItem match_tensor(const Graph& g, NodeId id, const SafeTensor& st, const std::string& shard,
                      const LoadOptions& opts) {
  const Node& n = g.node(id);
  if (n.dtype != st.dtype && !(opts.convert_floats && io::can_convert_float(st.dtype, n.dtype))) {
    const bool floats = is_float(st.dtype) && is_float(n.dtype);
    throw std::runtime_error(fmt::format(
        "[load_safetensors] {}: tensor '{}' is {}, graph input is {}{}", shard, st.name,
        dtype_name(st.dtype), dtype_name(n.dtype),
        floats && !opts.convert_floats ? " (LoadOptions::convert_floats converts)" : ""));
  }
  std::vector<int64_t> dims;
  for (const Expr& d : n.shape) {
    if (!d.as_const()) {
      throw std::runtime_error(
          fmt::format("[load_safetensors] {}: graph input '{}' has symbolic dim '{}' {}", shard,
                      st.name, d.to_string(), shape_string(n.shape)));
    }
    dims.push_back(*d.as_const());
  }
  if (dims != st.shape) {
    throw std::runtime_error(
        fmt::format("[load_safetensors] {}: tensor '{}' shape [{}] vs graph [{}]", shard, st.name,
                    fmt::join(st.shape, ", "), fmt::join(dims, ", ")));
  }
  const uint64_t numel = st.data.size() / dtype_size(st.dtype);
  return LoadItem{id, st.data, st.dtype, n.dtype, numel * dtype_size(n.dtype)};
}

// The generic upload: each tensor converted on the host (when its dtype differs) and bound as a
// persisted input; on failure every item is unbound (no half-loaded model).
void upload_items(Runtime& rt, const std::vector<LoadItem>& items, const LoadOptions& opts) {
  uint64_t total = 0;
  for (const LoadItem& it : items) total += it.bytes;
  io::LoadProgress progress(total, opts.progress);
  std::vector<std::byte> converted;
  try {
    for (const LoadItem& it : items) {
      std::span<const std::byte> bytes = it.data;
      if (it.from != it.to) {
        converted.resize(it.bytes);
        io::convert_float_elements(it.from, it.to, it.data.data(), converted.data(),
                                   it.data.size() / dtype_size(it.from));
        bytes = converted;
      }
      rt.upload(it.node, bytes, /*persist=*/true);
      progress.add(it.bytes);
    }
  } catch (...) {
    for (const LoadItem& it : items) rt.unbind_noexcept(it.node);
    throw;
  }
  progress.finish(items.size());
}

}  // namespace

size_t load_safetensors(Runtime& rt, const std::string& path, const LoadOptions& opts) {
  const Graph& graph = rt.graph();
  const SafetensorsCheckpoint ckpt = SafetensorsCheckpoint::open(path);
  std::vector<LoadItem> items;
  // Validate everything before uploading anything: a mismatch must not leave a half-loaded model.
  for (size_t i = 0; i < ckpt.tensors().size(); ++i) {
    const SafeTensor& st = *ckpt.tensors()[i];
    std::optional<NodeId> id = graph.find_input(st.name);
    if (!id) continue;
    items.push_back(match_tensor(graph, *id, st, ckpt.shard_path(i), opts));
  }
  if (!rt.load_items(items, opts)) upload_items(rt, items, opts);
  return items.size();
}

size_t load_safetensors(Runtime& rt, const std::string& path) {
  return load_safetensors(rt, path, LoadOptions{});
}

}  // namespace luminal
