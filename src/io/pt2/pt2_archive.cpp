// Pt2Archive::open: the archive layout written by torch.export.save (torch/export/pt2_archive/
// _package.py). Inside one top-level folder ("<name>/"):
//   archive_format            "pt2"
//   archive_version           an integer (absent in the oldest archives: 0)
//   models/<model>.json       the serialized ExportedProgram
//   data/weights/<model>_weights_config.json     {"config": {fqn: PayloadMeta}}
//   data/weights/weight_<i>   raw storage bytes (one per storage; aliasing views share one)
//   data/constants/<model>_constants_config.json, data/constants/tensor_<i>
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "io/pt2/payload.h"
#include "io/pt2/program_json.h"
#include "io/zip_reader.h"
#include "luminal/pt2.h"

namespace luminal {

using nlohmann::json;

struct Pt2Archive::Impl {
  io::ZipReader zip;
  /// Inflated entries that tensors point into (empty for STORED archives).
  std::vector<io::ZipBytes> held;
};

Pt2Archive::Pt2Archive() = default;
Pt2Archive::Pt2Archive(Pt2Archive&&) noexcept = default;
Pt2Archive& Pt2Archive::operator=(Pt2Archive&&) noexcept = default;
Pt2Archive::~Pt2Archive() = default;

namespace {

constexpr const char* kFormatFile = "archive_format";
constexpr const char* kVersionFile = "archive_version";
/// The newest archive layout version this reader knows (torch 2.11 and 2.15 write "0").
constexpr int kMaxArchiveVersion = 0;

/// The folder that holds archive_format: torch puts everything under one "<name>/" folder.
std::string find_prefix(const io::ZipReader& zip) {
  std::string best;
  bool found = false;
  for (const io::ZipEntry& e : zip.entries()) {
    const std::string& n = e.name;
    const size_t slash = n.find('/');
    const bool top =
        n == kFormatFile ||
        (slash != std::string::npos && n.compare(slash + 1, std::string::npos, kFormatFile) == 0);
    if (top && (!found || n.size() < best.size() + std::strlen(kFormatFile))) {
      best = n.substr(0, n.size() - std::strlen(kFormatFile));
      found = true;
    }
  }
  if (!found) zip.fail("not a .pt2 archive: no archive_format file");
  return best;
}

std::string read_text(const io::ZipReader& zip, const std::string& name) {
  const io::ZipBytes b = zip.read(name);
  return std::string(reinterpret_cast<const char*>(b.data.data()), b.data.size());
}

/// Model names from "<prefix>models/<name>.json", sorted.
std::vector<std::string> list_models(const io::ZipReader& zip, const std::string& prefix) {
  const std::string dir = prefix + "models/";
  std::vector<std::string> out;
  for (const io::ZipEntry& e : zip.entries()) {
    const std::string& n = e.name;
    if (n.size() > dir.size() + 5 && n.compare(0, dir.size(), dir) == 0 &&
        n.compare(n.size() - 5, 5, ".json") == 0 && n.find('/', dir.size()) == std::string::npos)
      out.push_back(n.substr(dir.size(), n.size() - dir.size() - 5));
  }
  std::sort(out.begin(), out.end());
  return out;
}

json parse_json_entry(const io::ZipReader& zip, const std::string& name, const std::string& shown) {
  const io::ZipBytes b = zip.read(name);
  const char* first = reinterpret_cast<const char*>(b.data.data());
  try {
    return json::parse(first, first + b.data.size());
  } catch (const json::exception& e) {
    zip.fail(fmt::format("{}: invalid JSON: {}", shown, e.what()));
  }
}

}  // namespace

Pt2Archive Pt2Archive::open(const std::string& path, const std::string& model) {
  Pt2Archive a;
  a.path_ = path;
  a.impl_ = std::unique_ptr<Impl>(new Impl{io::ZipReader::open(path, "pt2"), {}});
  const io::ZipReader& zip = a.impl_->zip;
  a.prefix_ = find_prefix(zip);
  const std::string format = read_text(zip, a.prefix_ + kFormatFile);
  if (format != "pt2")
    zip.fail(fmt::format("archive_format is '{}', expected 'pt2'", format.substr(0, 40)));
  if (zip.find(a.prefix_ + kVersionFile)) {
    const std::string v = read_text(zip, a.prefix_ + kVersionFile);
    size_t used = 0;
    try {
      a.archive_version_ = std::stoi(v, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || v.find_first_not_of(" \n\r\t", used) != std::string::npos)
      zip.fail(fmt::format("archive_version is '{}', expected an integer", v.substr(0, 40)));
    if (a.archive_version_ < 0 || a.archive_version_ > kMaxArchiveVersion)
      zip.fail(fmt::format("unsupported archive_version {} (this reader knows 0..{})",
                           a.archive_version_, kMaxArchiveVersion));
  }
  a.models_ = list_models(zip, a.prefix_);
  if (a.models_.empty()) zip.fail("no models/*.json program in the archive");
  a.model_ = model.empty() ? a.models_.front() : model;
  if (std::find(a.models_.begin(), a.models_.end(), a.model_) == a.models_.end())
    zip.fail(
        fmt::format("no model '{}' (the archive has: {})", a.model_, fmt::join(a.models_, ", ")));
  const std::string program_file = "models/" + a.model_ + ".json";
  const json program = parse_json_entry(zip, a.prefix_ + program_file, program_file);
  try {
    a.program_ = io::pt2::parse_program(program);
  } catch (const std::runtime_error& e) {
    zip.fail(fmt::format("{}: {}", program_file, e.what()));
  }
  io::pt2::PayloadLoader loader{zip, a.prefix_, a.impl_->held};
  a.weights_ = loader.load("data/weights/", a.model_, "weights");
  a.constants_ = loader.load("data/constants/", a.model_, "constants");
  if (const std::string why = io::pt2::signature_problem(a); !why.empty()) zip.fail(why);
  return a;
}

const Pt2Tensor* Pt2Archive::find_tensor(const std::string& name) const {
  for (const auto* list : {&weights_, &constants_}) {
    for (const Pt2Tensor& t : *list) {
      if (t.name == name) return &t;
    }
  }
  return nullptr;
}

}  // namespace luminal
