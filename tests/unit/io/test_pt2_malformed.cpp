// .pt2 reader on bad archives: edited copies of a real fixture get a clear "[pt2] <path>: ..."
// error; every truncation and many corrupted bytes never crash (run under tools/sanitize too).
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "expect_error.h"
#include "io/zip_reader.h"
#include "luminal/pt2.h"
#include "unit/io/io_test_util.h"
#include "unit/io/test_zip_builder.h"

namespace luminal {
namespace {

using nlohmann::json;
using test::expect_error;
using test::TempDir;
using test::ZipFile;

const std::string kMlp = std::string(LUMINAL_FIXTURES) + "/pt2/mlp_t211.pt2";
const std::string kPrefix = "mlp_t211/";

/// The fixture's entries, for rebuilding edited copies.
std::vector<ZipFile> fixture_files() {
  const io::ZipReader z = io::ZipReader::open(kMlp);
  std::vector<ZipFile> out;
  for (const io::ZipEntry& e : z.entries()) {
    const io::ZipBytes b = z.read(e);
    out.push_back(
        {e.name, std::string(reinterpret_cast<const char*>(b.data.data()), b.data.size())});
  }
  return out;
}

/// Writes the fixture with entry `name` edited by `edit` (or removed when edit returns false).
std::string edited(const TempDir& tmp, const std::string& name,
                   const std::function<bool(std::string&)>& edit) {
  std::vector<ZipFile> files;
  bool found = false;
  for (ZipFile f : fixture_files()) {
    if (f.name == kPrefix + name) {
      found = true;
      if (!edit(f.data)) continue;
    }
    files.push_back(f);
  }
  EXPECT_TRUE(found) << name;
  const std::string path = tmp.file("edited.pt2");
  test::write_bytes(path, test::build_zip(files));
  return path;
}

/// Edits a JSON entry through nlohmann.
std::function<bool(std::string&)> json_edit(const std::function<void(json&)>& f) {
  return [f](std::string& s) {
    json j = json::parse(s);
    f(j);
    s = j.dump();
    return true;
  };
}

void expect_pt2_error(const std::string& path, std::vector<std::string> words) {
  words.insert(words.begin(), "[pt2] " + path + ": ");
  expect_error([&] { Pt2Archive::open(path); }, words);
}

TEST(Pt2Malformed, NonFiniteFloatArgumentsAreFloats) {
  // torch writes inf / nan as the strings "Infinity", "-Infinity", "NaN" (masked_fill(-inf)).
  TempDir tmp;
  const std::string path =
      edited(tmp, "models/model.json", json_edit([](json& j) {
               json& in = j["graph_module"]["graph"]["nodes"][0]["inputs"];
               in.push_back({{"name", "f"}, {"arg", {{"as_float", "-Infinity"}}}});
               in.push_back({{"name", "fs"}, {"arg", {{"as_floats", {"NaN", 0.5, "Infinity"}}}}});
             }));
  const Pt2Archive a = Pt2Archive::open(path);
  const std::vector<Pt2NamedArgument>& in = a.program().graph.nodes[0].inputs;
  const Pt2Argument& f = in[in.size() - 2].arg;
  const Pt2Argument& fs = in.back().arg;
  ASSERT_EQ(f.values.size(), 1u);
  EXPECT_EQ(f.values[0].kind, Pt2Value::Kind::Float);
  EXPECT_EQ(f.values[0].f, -std::numeric_limits<double>::infinity());
  ASSERT_EQ(fs.values.size(), 3u);
  for (const Pt2Value& v : fs.values) EXPECT_EQ(v.kind, Pt2Value::Kind::Float);
  EXPECT_TRUE(std::isnan(fs.values[0].f));
  EXPECT_EQ(fs.values[1].f, 0.5);
  EXPECT_EQ(fs.values[2].f, std::numeric_limits<double>::infinity());
}

TEST(Pt2Malformed, RebuiltFixtureStillOpens) {
  TempDir tmp;
  const Pt2Archive a =
      Pt2Archive::open(edited(tmp, "archive_format", [](std::string&) { return true; }));
  EXPECT_EQ(a.weights().size(), 4u);
}

TEST(Pt2Malformed, UnsupportedSchemaVersion) {
  TempDir tmp;
  const std::string path = edited(tmp, "models/model.json",
                                  json_edit([](json& j) { j["schema_version"]["major"] = 9; }));
  expect_pt2_error(path, {"models/model.json", "unsupported schema version 9.", "major version 8"});
}

TEST(Pt2Malformed, WeightStorageTooSmall) {
  TempDir tmp;
  const std::string path = edited(tmp, "data/weights/weight_0", [](std::string& s) {
    s.resize(s.size() - 4);  // fc1.weight: 16x8 float32 = 512 bytes, now 508
    return true;
  });
  expect_pt2_error(path, {"fc1.weight", "needs 512 bytes", "holds 508"});
}

TEST(Pt2Malformed, WeightStorageNotAMultipleOfTheDtype) {
  TempDir tmp;
  const std::string path = edited(tmp, "data/weights/weight_0", [](std::string& s) {
    s += "xy";
    return true;
  });
  expect_pt2_error(path, {"fc1.weight", "514 bytes, not a multiple of 4"});
}

TEST(Pt2Malformed, WeightDtypeDisagreesWithTheGraph) {
  TempDir tmp;
  const std::string path = edited(
      tmp, "data/weights/model_weights_config.json", json_edit([](json& j) {
        j["config"]["fc1.weight"]["tensor_meta"]["dtype"] = 6;  // float16: 512 bytes still fit
      }));
  expect_pt2_error(path, {"'fc1.weight': stored as f16 but the graph expects float32"});
}

TEST(Pt2Malformed, WeightShapeDisagreesWithTheGraph) {
  TempDir tmp;
  const std::string path =
      edited(tmp, "data/weights/model_weights_config.json", json_edit([](json& j) {
               j["config"]["fc1.weight"]["tensor_meta"]["sizes"][0]["as_int"] = 8;
             }));
  expect_pt2_error(path, {"'fc1.weight': stored shape [8, 8] but the graph expects [16, 8]"});
}

TEST(Pt2Malformed, UnsupportedWeightDtype) {
  TempDir tmp;
  const std::string path =
      edited(tmp, "data/weights/model_weights_config.json",
             json_edit([](json& j) { j["config"]["fc1.bias"]["tensor_meta"]["dtype"] = 10; }));
  expect_pt2_error(path, {"fc1.bias", "dtype complex64 is not supported"});
}

TEST(Pt2Malformed, PickledWeight) {
  TempDir tmp;
  const std::string path =
      edited(tmp, "data/weights/model_weights_config.json",
             json_edit([](json& j) { j["config"]["fc2.bias"]["use_pickle"] = true; }));
  expect_pt2_error(path, {"fc2.bias", "pickled"});
}

TEST(Pt2Malformed, MissingWeight) {
  TempDir tmp;
  const std::string path = edited(tmp, "data/weights/model_weights_config.json",
                                  json_edit([](json& j) { j["config"].erase("fc2.weight"); }));
  expect_pt2_error(path, {"'fc2.weight' (graph input 'p_fc2_weight') has no stored data"});
}

TEST(Pt2Malformed, MissingStorageEntry) {
  TempDir tmp;
  expect_pt2_error(edited(tmp, "data/weights/weight_3", [](std::string&) { return false; }),
                   {"storage entry 'data/weights/weight_3' is missing"});
}

TEST(Pt2Malformed, MissingProgramJson) {
  TempDir tmp;
  expect_pt2_error(edited(tmp, "models/model.json", [](std::string&) { return false; }),
                   {"no models/*.json"});
}

TEST(Pt2Malformed, InvalidProgramJson) {
  TempDir tmp;
  const std::string path = edited(tmp, "models/model.json", [](std::string& s) {
    s.resize(s.size() / 2);
    return true;
  });
  expect_pt2_error(path, {"models/model.json: invalid JSON"});
}

TEST(Pt2Malformed, ProgramMissingAField) {
  TempDir tmp;
  const std::string path =
      edited(tmp, "models/model.json",
             json_edit([](json& j) { j["graph_module"]["graph"]["nodes"][1].erase("target"); }));
  expect_pt2_error(path, {"models/model.json", "nodes[1]", "missing 'target'"});
}

TEST(Pt2Malformed, DeeplyNestedArgumentIsRefusedNotRecursed) {
  TempDir tmp;
  const std::string path = edited(tmp, "models/model.json", [](std::string& s) {
    const std::string at = "\"inputs\": [{\"name\": \"input\"";
    const size_t p = s.find(at);
    EXPECT_NE(p, std::string::npos);
    const std::string deep =
        "{\"name\": \"deep\", \"arg\": {\"as_int_lists\": " + std::string(100000, '[') +
        std::string(100000, ']') + "}}, ";
    s.insert(p + at.size() - std::string("{\"name\": \"input\"").size(), deep);
    return true;
  });
  expect_pt2_error(path, {"models/model.json", "nested deeper than 200"});
}

TEST(Pt2Malformed, WrongArchiveFormat) {
  TempDir tmp;
  expect_pt2_error(edited(tmp, "archive_format", [](std::string& s) { return s = "zip", true; }),
                   {"archive_format is 'zip'"});
  expect_pt2_error(edited(tmp, "archive_format", [](std::string&) { return false; }),
                   {"no archive_format"});
}

TEST(Pt2Malformed, UnknownArchiveVersion) {
  TempDir tmp;
  expect_pt2_error(edited(tmp, "archive_version", [](std::string& s) { return s = "7", true; }),
                   {"unsupported archive_version 7"});
  expect_pt2_error(edited(tmp, "archive_version", [](std::string& s) { return s = "x", true; }),
                   {"archive_version is 'x'"});
}

TEST(Pt2Malformed, UnknownModelName) {
  expect_error([] { Pt2Archive::open(kMlp, "other"); }, {"[pt2] ", "no model 'other'", "model"});
}

/// Writes `bytes` to `path` and opens it: either a clean "[pt2]" exception or a program that
/// still looks whole.
void open_never_crashes(const std::string& path, const std::string& bytes, size_t at) {
  // A fresh file each time: rewriting a truncated file makes ext4 flush it (auto_da_alloc).
  std::filesystem::remove(path);
  test::write_bytes(path, bytes);
  try {
    const Pt2Archive a = Pt2Archive::open(path);
    EXPECT_EQ(a.program().graph.nodes.size(), 3u) << "at " << at;
    EXPECT_EQ(a.weights().size(), 4u) << "at " << at;
  } catch (const std::runtime_error& e) {
    ASSERT_EQ(std::string(e.what()).rfind("[pt2] " + path + ": ", 0), 0u) << e.what();
  }
}

TEST(Pt2Fuzz, EveryTruncationFailsCleanly) {
  TempDir tmp;
  const std::string bytes = test::read_bytes(kMlp);
  const std::string path = tmp.file("cut.pt2");
  for (size_t len = 0; len < bytes.size(); ++len) {
    open_never_crashes(path, bytes.substr(0, len), len);
  }
}

TEST(Pt2Fuzz, CorruptedBytesFailCleanly) {
  TempDir tmp;
  const std::string bytes = test::read_bytes(kMlp);
  const std::string path = tmp.file("bad.pt2");
  // Every byte of the zip structure at the end, a stride through the rest, three patterns each.
  const size_t tail = bytes.size() > 1500 ? bytes.size() - 1500 : 0;
  for (size_t at = 0; at < bytes.size(); at += at >= tail ? 1 : 7) {
    for (unsigned char x : {0x01, 0x80, 0xFF}) {
      std::string bad = bytes;
      bad[at] = static_cast<char>(bad[at] ^ x);
      open_never_crashes(path, bad, at);
    }
  }
}

TEST(Pt2Fuzz, DeflatedTruncationsFailCleanly) {
  TempDir tmp;
  const std::string bytes =
      test::read_bytes(std::string(LUMINAL_FIXTURES) + "/pt2/mlp_t215_deflated.pt2");
  const std::string path = tmp.file("cut.pt2");
  for (size_t len = 0; len < bytes.size(); len += 3) {
    open_never_crashes(path, bytes.substr(0, len), len);
  }
}

}  // namespace
}  // namespace luminal
