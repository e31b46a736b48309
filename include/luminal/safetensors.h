// safetensors files: a memory-mapped, validated reader and a writer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "luminal/dtype.h"

namespace luminal {

/// One tensor inside a safetensors file (data points into the mapping).
struct SafeTensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  /// Raw little-endian bytes in the mapping, valid while the file object lives. Not aligned: memcpy
  /// them out before reading typed values.
  std::span<const std::byte> data;
};

/// A read-only memory-mapped safetensors file. open() validates everything up front and throws
/// "[safetensors] <path>: <problem>" for truncated files, bad header lengths, invalid JSON,
/// unsupported dtypes, shape/size mismatches and out-of-range or overlapping data offsets.
class SafetensorsFile {
 public:
  /// Maps and validates the file.
  static SafetensorsFile open(const std::string& path);
  SafetensorsFile(SafetensorsFile&&) noexcept;
  SafetensorsFile& operator=(SafetensorsFile&&) noexcept;
  ~SafetensorsFile();

  /// All tensors, in file order of their data offsets.
  const std::vector<SafeTensor>& tensors() const { return tensors_; }
  /// The tensor with this name, or nullptr.
  const SafeTensor* find(const std::string& name) const;
  /// The tensor with this name, or "[safetensors] <path>: no tensor 'name'".
  const SafeTensor& at(const std::string& name) const;
  /// The optional "__metadata__" string map.
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// The path it was opened from.
  const std::string& path() const { return path_; }

 private:
  SafetensorsFile() = default;
  std::string path_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  std::vector<SafeTensor> tensors_;
  std::map<std::string, std::string> metadata_;
};

/// A checkpoint: one safetensors file, or every shard of a Hugging Face index, all mapped and
/// validated up front. open() throws "[load_safetensors] <path>: <problem>" for a malformed index,
/// a missing or unreadable shard, a weight_map entry its shard lacks, a tensor the weight_map does
/// not list, and a tensor present in two shards.
class SafetensorsCheckpoint {
 public:
  /// Opens a .safetensors file, a *.safetensors.index.json, or a directory holding exactly one
  /// index (preferred) or exactly one .safetensors file.
  static SafetensorsCheckpoint open(const std::string& path);

  /// Every tensor of every shard, each name once (shards in name order, then file order).
  const std::vector<const SafeTensor*>& tensors() const { return tensors_; }
  /// The shard file holding tensors()[i].
  const std::string& shard_path(size_t i) const { return shards_[shard_of_[i]].path(); }
  /// The open shard files.
  const std::vector<SafetensorsFile>& shards() const { return shards_; }
  /// The path it was opened from.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<SafetensorsFile> shards_;
  std::vector<const SafeTensor*> tensors_;
  std::vector<size_t> shard_of_;
};

/// A tensor to write.
struct TensorData {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<std::byte> bytes;
};

/// Builds a TensorData from typed values (dtype deduced from T: float, double, int32_t, int64_t, uint8_t, int8_t).
template <class T>
TensorData make_tensor_data(std::string name, std::vector<int64_t> shape, std::span<const T> values);

/// Writes a safetensors file (tensors laid out in the given order; optional metadata).
void write_safetensors(const std::string& path, const std::vector<TensorData>& tensors,
                       const std::map<std::string, std::string>& metadata = {});

class Runtime;
struct LoadOptions;

/// Loads every checkpoint tensor whose name matches an Input of rt's graph (persisted). `path` is
/// a .safetensors file, a Hugging Face *.safetensors.index.json (weight_map -> shard files), or a
/// directory holding one of them. Returns the number of tensors loaded.
///
/// All or nothing: every shard is opened and every match checked (dtype, shape, duplicates,
/// device memory) before anything is uploaded; such an error leaves the runtime unchanged. If the
/// upload itself fails (out of memory, device error), every input the checkpoint names is left
/// without data, so execute() refuses with "has no data" instead of running a mixed model.
size_t load_safetensors(Runtime& rt, const std::string& path, const LoadOptions& opts);
/// load_safetensors with default LoadOptions.
size_t load_safetensors(Runtime& rt, const std::string& path);

}  // namespace luminal
