// safetensors reader: maps the file and validates the whole header before handing out tensors.
// Layout: u64 little-endian header length N, N bytes of JSON (space padded), then the data section.
#include "luminal/safetensors.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/mapped_file.h"
#include "io/printable.h"
#include "io/safetensors_common.h"

namespace luminal {

namespace {

using io::checked_nbytes;
using io::printable;
using io::shape_str;
using nlohmann::json;

/// Same cap as the reference Rust implementation; a bigger header is corrupt or hostile.
constexpr uint64_t kMaxHeaderBytes = 100'000'000;

/// A short description of a JSON value for messages; never recurses into nested values, which a
/// hostile header can nest millions deep.
std::string brief(const json& v) {
  bool flat = v.is_array() && v.size() <= 8 &&
              std::all_of(v.begin(), v.end(), [](const json& x) { return x.is_primitive(); });
  return flat || v.is_primitive() ? v.dump() : std::string(v.type_name());
}

/// Throws "[safetensors] <path>: <problem>".
struct Fail {
  const std::string& path;
  [[noreturn]] void operator()(const std::string& problem) const {
    throw std::runtime_error(fmt::format("[safetensors] {}: {}", path, problem));
  }
};

/// A parsed header entry plus its offsets into the data section.
struct Entry {
  SafeTensor tensor;
  uint64_t begin = 0;
  uint64_t end = 0;
};

const json& field(const Fail& fail, const std::string& name, const json& entry, const char* key) {
  auto it = entry.find(key);
  if (it == entry.end()) fail(fmt::format("tensor '{}': missing '{}'", name, key));
  return *it;
}

DType parse_dtype(const Fail& fail, const std::string& name, const json& v) {
  if (!v.is_string()) fail(fmt::format("tensor '{}': 'dtype' must be a string", name));
  const auto& s = v.get_ref<const std::string&>();
  auto dt = dtype_from_safetensors(s);
  if (!dt) fail(fmt::format("tensor '{}': unsupported dtype '{}'", name, s));
  return *dt;
}

std::vector<int64_t> parse_shape(const Fail& fail, const std::string& name, const json& v) {
  if (!v.is_array()) fail(fmt::format("tensor '{}': 'shape' must be an array of integers", name));
  std::vector<int64_t> shape;
  for (const json& d : v) {
    // Non-negative integers parse as unsigned; reject those that do not fit int64.
    bool fits = d.is_number_integer() &&
                (!d.is_number_unsigned() ||
                 d.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()));
    if (!fits)
      fail(
          fmt::format("tensor '{}': 'shape' must be an array of integers, got {}", name, brief(v)));
    shape.push_back(d.get<int64_t>());
  }
  for (int64_t d : shape) {
    if (d < 0)
      fail(fmt::format("tensor '{}': negative dim {} in shape {}", name, d, shape_str(shape)));
  }
  return shape;
}

std::pair<uint64_t, uint64_t> parse_offsets(const Fail& fail, const std::string& name,
                                            const json& v) {
  bool ok = v.is_array() && v.size() == 2 && v[0].is_number_integer() && v[1].is_number_integer();
  if (!ok)
    fail(fmt::format("tensor '{}': 'data_offsets' must be [begin, end] integers, got {}", name,
                     brief(v)));
  if (!v[0].is_number_unsigned() || !v[1].is_number_unsigned()) {
    fail(fmt::format("tensor '{}': negative data_offsets {}", name, brief(v)));
  }
  return {v[0].get<uint64_t>(), v[1].get<uint64_t>()};
}

/// Validates one tensor entry against the data section [data, data + data_size).
Entry parse_entry(const Fail& fail, const std::string& name, const json& v, const std::byte* data,
                  uint64_t data_size) {
  if (!v.is_object())
    fail(fmt::format("tensor '{}': entry must be an object, got {}", name, v.type_name()));
  Entry e;
  e.tensor.name = name;
  e.tensor.dtype = parse_dtype(fail, name, field(fail, name, v, "dtype"));
  e.tensor.shape = parse_shape(fail, name, field(fail, name, v, "shape"));
  std::tie(e.begin, e.end) = parse_offsets(fail, name, field(fail, name, v, "data_offsets"));
  if (e.begin > e.end)
    fail(fmt::format("tensor '{}': data_offsets [{}, {}] have begin > end", name, e.begin, e.end));
  if (e.end > data_size) {
    fail(fmt::format("tensor '{}': data_offsets [{}, {}] out of range (data section is {} bytes)",
                     name, e.begin, e.end, data_size));
  }
  auto need = checked_nbytes(e.tensor.shape, e.tensor.dtype);
  const std::string desc =
      fmt::format("shape {} {}", shape_str(e.tensor.shape), dtype_name(e.tensor.dtype));
  if (!need) fail(fmt::format("tensor '{}': {} is too large", name, desc));
  if (*need != e.end - e.begin) {
    fail(fmt::format("tensor '{}': {} needs {} bytes, data_offsets [{}, {}] hold {}", name, desc,
                     *need, e.begin, e.end, e.end - e.begin));
  }
  e.tensor.data = std::span<const std::byte>(data + e.begin, e.end - e.begin);
  return e;
}

std::map<std::string, std::string> parse_metadata(const Fail& fail, const json& v) {
  if (!v.is_object()) fail(fmt::format("'__metadata__' must be an object, got {}", v.type_name()));
  std::map<std::string, std::string> out;
  for (const auto& [key, val] : v.items()) {
    if (!val.is_string())
      fail(fmt::format("metadata '{}' must be a string, got {}", key, val.type_name()));
    out.emplace(key, val.get<std::string>());
  }
  return out;
}

/// Parses the header JSON; nlohmann keeps the last of duplicate keys, so top-level duplicates are
/// caught here.
json parse_header(const Fail& fail, const char* first, const char* last) {
  std::optional<std::string> duplicate;
  std::set<std::string> seen;
  auto on_event = [&](int depth, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::key && depth == 1 && !duplicate) {
      if (!seen.insert(parsed.get<std::string>()).second) duplicate = parsed.get<std::string>();
    }
    return true;
  };
  json header;
  try {
    header = json::parse(first, last, on_event);
  } catch (const json::exception& e) {
    fail(fmt::format("invalid JSON header: {}", printable(e.what())));
  }
  if (!header.is_object())
    fail(fmt::format("header must be a JSON object, got {}", header.type_name()));
  if (duplicate) fail(fmt::format("duplicate tensor name '{}'", *duplicate));
  return header;
}

/// Zero-byte tensors hold no data, so only tensors with bytes can overlap.
void check_overlaps(const Fail& fail, const std::vector<Entry>& sorted) {
  const Entry* prev = nullptr;
  for (const Entry& e : sorted) {
    if (e.begin == e.end) continue;
    if (prev && e.begin < prev->end) {
      fail(fmt::format("tensors '{}' and '{}' overlap (data_offsets [{}, {}] and [{}, {}])",
                       prev->tensor.name, e.tensor.name, prev->begin, prev->end, e.begin, e.end));
    }
    prev = &e;
  }
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  const Fail fail{path};
  io::MappedFile map = io::MappedFile::open(path, "safetensors");
  const uint64_t size = map.size();
  if (size < 8) fail(fmt::format("truncated: {} bytes, need at least 8", size));
  uint64_t header_len = 0;
  std::memcpy(&header_len, map.data(), 8);
  if (header_len > size - 8)
    fail(fmt::format("header length {} exceeds file size {}", header_len, size));
  if (header_len > kMaxHeaderBytes)
    fail(fmt::format("header length {} exceeds the limit {}", header_len, kMaxHeaderBytes));

  const char* json_begin = reinterpret_cast<const char*>(map.data()) + 8;
  json header = parse_header(fail, json_begin, json_begin + header_len);

  SafetensorsFile file;
  file.path_ = path;
  const std::byte* data = map.data() + 8 + header_len;
  const uint64_t data_size = size - 8 - header_len;
  std::vector<Entry> entries;
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      file.metadata_ = parse_metadata(fail, value);
    } else {
      entries.push_back(parse_entry(fail, name, value, data, data_size));
    }
  }
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end) < std::tie(b.begin, b.end);
  });
  check_overlaps(fail, entries);
  for (Entry& e : entries) file.tensors_.push_back(std::move(e.tensor));
  file.map_size_ = map.size();
  file.map_ = map.release();
  return file;
}

SafetensorsFile::SafetensorsFile(SafetensorsFile&& other) noexcept
    : path_(std::move(other.path_)),
      map_(std::exchange(other.map_, nullptr)),
      map_size_(std::exchange(other.map_size_, 0)),
      tensors_(std::move(other.tensors_)),
      metadata_(std::move(other.metadata_)) {}

SafetensorsFile& SafetensorsFile::operator=(SafetensorsFile&& other) noexcept {
  if (this != &other) {
    io::MappedFile::unmap(map_, map_size_);
    path_ = std::move(other.path_);
    map_ = std::exchange(other.map_, nullptr);
    map_size_ = std::exchange(other.map_size_, 0);
    tensors_ = std::move(other.tensors_);
    metadata_ = std::move(other.metadata_);
  }
  return *this;
}

SafetensorsFile::~SafetensorsFile() { io::MappedFile::unmap(map_, map_size_); }

const SafeTensor* SafetensorsFile::find(const std::string& name) const {
  auto it = std::find_if(tensors_.begin(), tensors_.end(),
                         [&](const SafeTensor& t) { return t.name == name; });
  return it == tensors_.end() ? nullptr : &*it;
}

const SafeTensor& SafetensorsFile::at(const std::string& name) const {
  if (const SafeTensor* t = find(name)) return *t;
  Fail{path_}(fmt::format("no tensor '{}'", name));
}

}  // namespace luminal
