// SafetensorsCheckpoint: a single file, a Hugging Face shard index, or a directory holding one.
#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>

#include "luminal/safetensors.h"

namespace luminal {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr uintmax_t kMaxIndexBytes = 256u << 20;  // real indexes are well under 10 MB

[[noreturn]] void fail(const std::string& path, const std::string& why) {
  throw std::runtime_error(fmt::format("[load_safetensors] {}: {}", path, why));
}

bool ends_with(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// The index or single file a directory stands for.
std::string resolve_directory(const std::string& dir) {
  std::vector<std::string> indexes, files;
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (ends_with(name, ".safetensors.index.json")) indexes.push_back(e.path().string());
    if (ends_with(name, ".safetensors")) files.push_back(e.path().string());
  }
  std::sort(indexes.begin(), indexes.end());
  if (indexes.size() == 1) return indexes[0];
  if (indexes.size() > 1)
    fail(dir,
         fmt::format("{} *.safetensors.index.json files; pass the one to load", indexes.size()));
  if (files.size() == 1) return files[0];
  if (files.empty()) fail(dir, "no .safetensors file or *.safetensors.index.json in the directory");
  fail(dir, fmt::format("{} .safetensors files and no *.safetensors.index.json; pass the index or "
                        "one file",
                        files.size()));
}

// weight_map of an index file: tensor name -> shard file name (relative to the index).
std::map<std::string, std::string> read_weight_map(const std::string& path) {
  std::error_code ec;
  const uintmax_t size = fs::file_size(path, ec);
  if (ec) fail(path, "cannot read the index: " + ec.message());
  if (size > kMaxIndexBytes) fail(path, fmt::format("index of {} bytes is too large", size));
  std::ifstream in(path, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (!in.good() && !in.eof()) fail(path, "cannot read the index");
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) fail(path, "the index is not valid JSON");
  if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
    fail(path, "the index has no \"weight_map\" object");
  std::map<std::string, std::string> map;
  for (const auto& [name, shard] : j["weight_map"].items()) {
    if (!shard.is_string() || shard.get<std::string>().empty())
      fail(path, fmt::format("weight_map entry '{}' is not a shard file name", name));
    const fs::path p(shard.get<std::string>());
    const bool escapes = p.is_absolute() || std::any_of(p.begin(), p.end(), [](const fs::path& c) {
                           return c == "..";
                         });
    if (escapes)
      fail(path, fmt::format("weight_map entry '{}': shard '{}' is outside the index's directory",
                             name, p.string()));
    map[name] = p.string();
  }
  if (map.empty()) fail(path, "the index's weight_map is empty");
  return map;
}

}  // namespace

SafetensorsCheckpoint SafetensorsCheckpoint::open(const std::string& path) {
  std::error_code ec;
  std::string file = fs::is_directory(path, ec) ? resolve_directory(path) : path;
  SafetensorsCheckpoint c;
  c.path_ = path;
  if (!ends_with(file, ".json")) {
    c.shards_.push_back(SafetensorsFile::open(file));
  } else {
    const std::map<std::string, std::string> map = read_weight_map(file);
    const fs::path dir = fs::path(file).parent_path();
    std::map<std::string, size_t> shard_index;  // shard name -> position in shards_
    for (const auto& [name, shard] : map) shard_index.emplace(shard, 0);
    for (auto& [shard, index] : shard_index) {
      const std::string shard_path = (dir / shard).string();
      if (!fs::exists(shard_path, ec))
        fail(file, fmt::format("shard '{}' (holding e.g. '{}') does not exist", shard,
                               std::find_if(map.begin(), map.end(), [&](const auto& kv) {
                                 return kv.second == shard;
                               })->first));
      index = c.shards_.size();
      c.shards_.push_back(SafetensorsFile::open(shard_path));
    }
    for (const auto& [name, shard] : map) {
      if (!c.shards_[shard_index[shard]].find(name))
        fail(file, fmt::format("weight_map puts '{}' in shard '{}', which has no such tensor", name,
                               shard));
    }
    for (const SafetensorsFile& f : c.shards_) {
      for (const SafeTensor& t : f.tensors()) {
        auto it = map.find(t.name);
        if (it == map.end())
          fail(file, fmt::format("shard '{}' holds '{}', which the weight_map does not list",
                                 f.path(), t.name));
        if (c.shards_[shard_index[it->second]].path() != f.path())
          fail(file, fmt::format("tensor '{}' is in shard '{}' and in shard '{}'", t.name,
                                 it->second, fs::path(f.path()).filename().string()));
      }
    }
  }
  for (size_t s = 0; s < c.shards_.size(); ++s) {
    for (const SafeTensor& t : c.shards_[s].tensors()) {
      c.tensors_.push_back(&t);
      c.shard_of_.push_back(s);
    }
  }
  return c;
}

}  // namespace luminal
