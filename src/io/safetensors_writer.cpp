// safetensors writer: header in the given order, space padded to 8 bytes, data contiguous.
#include "luminal/safetensors.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>
#include <type_traits>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/safetensors_common.h"

namespace luminal {

namespace {

using io::checked_nbytes;
using io::checked_numel;
using io::shape_str;

/// Writes all of `bytes` to fd, retrying short writes; returns errno or 0.
int write_all(int fd, const void* bytes, size_t n) {
  const auto* p = static_cast<const char*>(bytes);
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

/// Checks names, shapes and byte sizes, then builds the header (given order, padded to a multiple
/// of 8).
std::string build_header(const std::string& path, const std::vector<TensorData>& tensors,
                         const std::map<std::string, std::string>& metadata) {
  auto fail = [&](const std::string& problem) {
    throw std::runtime_error(fmt::format("[safetensors] write {}: {}", path, problem));
  };
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::set<std::string> names;
  uint64_t offset = 0;
  for (const TensorData& t : tensors) {
    if (t.name == "__metadata__") fail("tensor name '__metadata__' is reserved");
    if (!names.insert(t.name).second) fail(fmt::format("duplicate tensor name '{}'", t.name));
    for (int64_t d : t.shape) {
      if (d < 0)
        fail(
            fmt::format("tensor '{}': negative dim {} in shape {}", t.name, d, shape_str(t.shape)));
    }
    auto need = checked_nbytes(t.shape, t.dtype);
    if (!need || *need != t.bytes.size()) {
      fail(fmt::format("tensor '{}' has {} bytes, shape {} {} needs {}", t.name, t.bytes.size(),
                       shape_str(t.shape), dtype_name(t.dtype),
                       need ? fmt::to_string(*need) : std::string("more than 2^64")));
    }
    header[t.name] = {{"dtype", safetensors_name(t.dtype)},
                      {"shape", t.shape},
                      {"data_offsets", {offset, offset + t.bytes.size()}}};
    offset += t.bytes.size();
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {  // names or metadata that are not valid UTF-8
    fail(fmt::format("cannot encode header: {}", e.what()));
  }
  text.resize((text.size() + 7) / 8 * 8, ' ');
  return text;
}

}  // namespace

void write_safetensors(const std::string& path, const std::vector<TensorData>& tensors,
                       const std::map<std::string, std::string>& metadata) {
  const std::string header = build_header(path, tensors, metadata);
  // Write a sibling temp file and rename it, so readers never see a half-written file.
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    throw std::runtime_error(fmt::format("[safetensors] write {}: cannot create {}: {}", path, tmp,
                                         std::strerror(errno)));
  }
  const uint64_t header_len = header.size();
  int err = write_all(fd, &header_len, 8);
  if (!err) err = write_all(fd, header.data(), header.size());
  for (size_t i = 0; i < tensors.size() && !err; ++i)
    err = write_all(fd, tensors[i].bytes.data(), tensors[i].bytes.size());
  if (::close(fd) != 0 && !err) err = errno;
  if (!err && ::rename(tmp.c_str(), path.c_str()) != 0) err = errno;
  if (err) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(fmt::format("[safetensors] write {}: {}", path, std::strerror(err)));
  }
}

namespace {

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, float>)
    return DType::F32;
  else if constexpr (std::is_same_v<T, double>)
    return DType::F64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::I32;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::I64;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::U8;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::I8;
  else
    static_assert(sizeof(T) == 0, "make_tensor_data: unsupported element type");
}

}  // namespace

template <class T>
TensorData make_tensor_data(std::string name, std::vector<int64_t> shape,
                            std::span<const T> values) {
  for (int64_t d : shape) {
    if (d < 0) {
      throw std::invalid_argument(
          fmt::format("[safetensors] make_tensor_data '{}': negative dim {} in shape {}", name, d,
                      shape_str(shape)));
    }
  }
  auto numel = checked_numel(shape);
  if (!numel || *numel != values.size()) {
    throw std::invalid_argument(
        fmt::format("[safetensors] make_tensor_data '{}': {} values for shape {}", name,
                    values.size(), shape_str(shape)));
  }
  TensorData t{std::move(name), dtype_of<T>(), std::move(shape),
               std::vector<std::byte>(values.size_bytes())};
  if (!values.empty()) std::memcpy(t.bytes.data(), values.data(), values.size_bytes());
  return t;
}

template TensorData make_tensor_data<float>(std::string, std::vector<int64_t>,
                                            std::span<const float>);
template TensorData make_tensor_data<double>(std::string, std::vector<int64_t>,
                                             std::span<const double>);
template TensorData make_tensor_data<int32_t>(std::string, std::vector<int64_t>,
                                              std::span<const int32_t>);
template TensorData make_tensor_data<int64_t>(std::string, std::vector<int64_t>,
                                              std::span<const int64_t>);
template TensorData make_tensor_data<uint8_t>(std::string, std::vector<int64_t>,
                                              std::span<const uint8_t>);
template TensorData make_tensor_data<int8_t>(std::string, std::vector<int64_t>,
                                             std::span<const int8_t>);

}  // namespace luminal
