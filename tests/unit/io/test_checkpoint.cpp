// Sharded checkpoints: Hugging Face index files, directories, and all-or-nothing loading.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "expect_error.h"
#include "luminal/reference.h"
#include "luminal/safetensors.h"
#include "unit/io/io_test_util.h"

namespace luminal {
namespace {

using Floats = std::vector<float>;
using test::expect_error;
using test::TempDir;

void write_text(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
}

// A two-layer model: weights a [2, 3], b [3]; y = a.sum(1) ... plus c [2] held in shard 2.
struct Model {
  Graph g;
  GraphTensor a = g.named_tensor("a", {2, 3}).persist();
  GraphTensor c = g.named_tensor("c", {2}).persist();
  GraphTensor y = (a.sum(1) * c).output();
};

const Floats kA{1, 2, 3, 4, 5, 6}, kC{10, -1};
const Floats kY{60, -15};  // row sums 6, 15 times c

// Writes a two-shard checkpoint (a + an unused tensor in shard 1, c in shard 2) and its index.
std::string write_sharded(const TempDir& tmp, const std::string& extra_map = "") {
  write_safetensors(tmp.file("model-00001-of-00002.safetensors"),
                    {make_tensor_data<float>("a", {2, 3}, kA),
                     make_tensor_data<float>("unused", {1}, Floats{7})});
  write_safetensors(tmp.file("model-00002-of-00002.safetensors"),
                    {make_tensor_data<float>("c", {2}, kC)});
  const std::string index = tmp.file("model.safetensors.index.json");
  write_text(index, R"({"metadata": {"total_size": 36}, "weight_map": {)"
                    R"("a": "model-00001-of-00002.safetensors",)"
                    R"("unused": "model-00001-of-00002.safetensors",)"
                    R"("c": "model-00002-of-00002.safetensors")" +
                        extra_map + "}}");
  return index;
}

TEST(Checkpoint, LoadsEveryShardOfAnIndex) {
  TempDir tmp;
  const std::string index = write_sharded(tmp);
  const SafetensorsCheckpoint ck = SafetensorsCheckpoint::open(index);
  ASSERT_EQ(ck.shards().size(), 2u);
  ASSERT_EQ(ck.tensors().size(), 3u);
  EXPECT_EQ(ck.tensors()[2]->name, "c");
  EXPECT_NE(ck.shard_path(2).find("model-00002-of-00002"), std::string::npos);
  Model m;
  ReferenceRuntime rt(m.g);
  EXPECT_EQ(load_safetensors(rt, index), 2u);
  rt.execute();
  EXPECT_EQ(rt.get_f32(m.y), kY);
}

TEST(Checkpoint, ADirectoryStandsForItsIndexOrItsOnlyFile) {
  TempDir tmp;
  write_sharded(tmp);
  Model m;
  ReferenceRuntime rt(m.g);
  EXPECT_EQ(load_safetensors(rt, tmp.file("")), 2u);
  rt.execute();
  EXPECT_EQ(rt.get_f32(m.y), kY);

  TempDir one;  // same test name: recreated empty
  const std::string dir = one.file("single");
  std::filesystem::create_directories(dir);
  write_safetensors(dir + "/model.safetensors", {make_tensor_data<float>("a", {2, 3}, kA),
                                                 make_tensor_data<float>("c", {2}, kC)});
  ReferenceRuntime rt2(m.g);
  EXPECT_EQ(load_safetensors(rt2, dir), 2u);
  rt2.execute();
  EXPECT_EQ(rt2.get_f32(m.y), kY);
}

TEST(Checkpoint, AmbiguousOrEmptyDirectoriesAreRefused) {
  TempDir tmp;
  const std::string dir = tmp.file("d");
  std::filesystem::create_directories(dir);
  expect_error([&] { SafetensorsCheckpoint::open(dir); },
               {"[load_safetensors]", dir, "no .safetensors file"});
  write_safetensors(dir + "/x.safetensors", {make_tensor_data<float>("a", {1}, Floats{1})});
  write_safetensors(dir + "/y.safetensors", {make_tensor_data<float>("b", {1}, Floats{1})});
  expect_error([&] { SafetensorsCheckpoint::open(dir); },
               {"[load_safetensors]", "2 .safetensors files and no *.safetensors.index.json"});
}

TEST(Checkpoint, MissingShardIsNamed) {
  TempDir tmp;
  const std::string index = write_sharded(tmp, R"(, "d": "model-00003-of-00003.safetensors")");
  expect_error([&] { SafetensorsCheckpoint::open(index); },
               {"[load_safetensors]", index, "shard 'model-00003-of-00003.safetensors'", "'d'",
                "does not exist"});
}

TEST(Checkpoint, TensorMissingFromItsShardIsNamed) {
  TempDir tmp;
  const std::string index = write_sharded(tmp, R"(, "d": "model-00002-of-00002.safetensors")");
  expect_error(
      [&] { SafetensorsCheckpoint::open(index); },
      {"[load_safetensors]", "weight_map puts 'd' in shard 'model-00002-of-00002.safetensors'",
       "no such tensor"});
}

TEST(Checkpoint, DuplicateTensorAcrossShardsIsRefused) {
  TempDir tmp;
  const std::string index = write_sharded(tmp);
  // Shard 2 now also holds "a" (the index says shard 1).
  write_safetensors(
      tmp.file("model-00002-of-00002.safetensors"),
      {make_tensor_data<float>("c", {2}, kC), make_tensor_data<float>("a", {2, 3}, kA)});
  expect_error([&] { SafetensorsCheckpoint::open(index); },
               {"[load_safetensors]", "tensor 'a' is in shard 'model-00001-of-00002.safetensors'",
                "and in shard 'model-00002-of-00002.safetensors'"});
}

TEST(Checkpoint, TensorTheIndexDoesNotListIsRefused) {
  TempDir tmp;
  const std::string index = write_sharded(tmp);
  write_safetensors(
      tmp.file("model-00002-of-00002.safetensors"),
      {make_tensor_data<float>("c", {2}, kC), make_tensor_data<float>("z", {1}, Floats{1})});
  expect_error([&] { SafetensorsCheckpoint::open(index); },
               {"[load_safetensors]", "holds 'z', which the weight_map does not list"});
}

TEST(Checkpoint, MalformedIndexJson) {
  TempDir tmp;
  write_sharded(tmp);
  const std::string bad = tmp.file("bad.safetensors.index.json");
  struct Case {
    std::string text, error;
  };
  const std::vector<Case> cases{
      {R"({"weight_map": {"a": "model-00001-of-00002.safetensors")", "not valid JSON"},
      {"[1, 2]", "no \"weight_map\" object"},
      {R"({"metadata": {}})", "no \"weight_map\" object"},
      {R"({"weight_map": ["a"]})", "no \"weight_map\" object"},
      {R"({"weight_map": {}})", "weight_map is empty"},
      {R"({"weight_map": {"a": 3}})", "entry 'a' is not a shard file name"},
      {R"({"weight_map": {"a": ""}})", "entry 'a' is not a shard file name"},
      {R"({"weight_map": {"a": "../x.safetensors"}})", "outside the index's directory"},
      {R"({"weight_map": {"a": "/etc/passwd"}})", "outside the index's directory"},
      {"", "not valid JSON"},
  };
  for (const Case& c : cases) {
    write_text(bad, c.text);
    SCOPED_TRACE(c.text);
    expect_error([&] { SafetensorsCheckpoint::open(bad); }, {"[load_safetensors]", bad, c.error});
  }
}

TEST(Checkpoint, CorruptShardFailsTheWholeLoadAndLeavesTheRuntimeUnchanged) {
  TempDir tmp;
  const std::string index = write_sharded(tmp);
  Model m;
  ReferenceRuntime rt(m.g);
  // Bind earlier weights; a failing load must not touch them.
  rt.set_data(m.a, std::span<const float>(Floats{0, 0, 1, 0, 0, 1}));
  rt.set_data(m.c, std::span<const float>(Floats{2, 3}));
  // Shard 2's header promises 8 bytes of data that are not there.
  test::write_bytes(
      tmp.file("model-00002-of-00002.safetensors"),
      test::st_bytes(R"({"c": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}})"));
  expect_error([&] { load_safetensors(rt, index); },
               {"[safetensors]", "model-00002-of-00002.safetensors"});
  rt.execute();
  EXPECT_EQ(rt.get_f32(m.y), (Floats{2, 3}));
}

TEST(Checkpoint, ShapeMismatchInALaterShardLoadsNothing) {
  TempDir tmp;
  const std::string index = write_sharded(tmp);
  write_safetensors(tmp.file("model-00002-of-00002.safetensors"),
                    {make_tensor_data<float>("c", {3}, Floats{1, 2, 3})});
  Model m;
  ReferenceRuntime rt(m.g);
  expect_error(
      [&] { load_safetensors(rt, index); },
      {"[load_safetensors]", "model-00002-of-00002.safetensors", "'c'", "shape [3] vs graph [2]"});
  // "a" (shard 1, valid) was not bound either.
  rt.set_data(m.c, std::span<const float>(kC));
  expect_error([&] { rt.execute(); }, {"input 'a' has no data"});
}

// A runtime whose upload fails on the second tensor: the rest of the load path is the real one.
class FailingRuntime final : public Runtime {
 public:
  using Runtime::Runtime;
  std::map<NodeId, std::vector<std::byte>> data;
  int uploads = 0;
  void execute(const DynMap&) override {}
  std::vector<std::byte> get_bytes(const GraphTensor& t) override { return data.at(t.id); }
  Buffer remove_buffer(const GraphTensor& t) override {
    if (data.erase(t.id) == 0) throw std::runtime_error("no buffer");
    return {};
  }
  void set_buffer(const GraphTensor&, Buffer) override {}

 protected:
  void upload(NodeId input, std::span<const std::byte> bytes, bool) override {
    if (++uploads == 2) throw std::runtime_error("[test] device out of memory");
    data[input].assign(bytes.begin(), bytes.end());
  }
};

TEST(Checkpoint, FailedUploadUnbindsEveryInputTheCheckpointNames) {
  TempDir tmp;
  const std::string index = write_sharded(tmp);
  Model m;
  FailingRuntime rt(m.g);
  rt.data[m.c.id] = std::vector<std::byte>(8);  // bound before: must not survive a failed load
  expect_error([&] { load_safetensors(rt, index); }, {"[test] device out of memory"});
  EXPECT_TRUE(rt.data.empty()) << rt.data.size() << " inputs still bound";
}

}  // namespace
}  // namespace luminal
