// safetensors reader/writer: round trips, a file written by Python's safetensors, writer errors.
#include "luminal/safetensors.h"

#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "unit/io/io_test_util.h"

namespace luminal {
namespace {

using test::contains_all;
using test::TempDir;

/// Copies a tensor's bytes into typed values (spans into the mapping may be unaligned).
template <class T>
std::vector<T> values_of(const SafeTensor& t) {
  EXPECT_EQ(t.data.size() % sizeof(T), 0u) << t.name;
  std::vector<T> out(t.data.size() / sizeof(T));
  if (!out.empty()) std::memcpy(out.data(), t.data.data(), t.data.size());
  return out;
}

std::vector<std::byte> to_bytes(std::initializer_list<uint8_t> b) {
  std::vector<std::byte> out;
  for (uint8_t x : b) out.push_back(std::byte{x});
  return out;
}

std::vector<std::string> names_of(const SafetensorsFile& f) {
  std::vector<std::string> out;
  for (const auto& t : f.tensors()) out.push_back(t.name);
  return out;
}

TEST(Safetensors, RoundTripAllDtypesAndMetadata) {
  TempDir tmp;
  const std::string path = tmp.file("rt.safetensors");
  std::vector<TensorData> in;
  in.push_back(make_tensor_data<float>("w", {2, 3}, std::vector<float>{1, 2, 3, 4, 5, -6.5f}));
  in.push_back(make_tensor_data<double>("d", {2}, std::vector<double>{0.1, -1e300}));
  in.push_back(make_tensor_data<int32_t>("i32", {3}, std::vector<int32_t>{-1, 0, 2147483647}));
  in.push_back(make_tensor_data<int64_t>("i64", {2, 1}, std::vector<int64_t>{-9000000000LL, 7}));
  in.push_back(make_tensor_data<float>("empty", {0, 4}, std::vector<float>{}));
  in.push_back(make_tensor_data<uint8_t>("u8", {5}, std::vector<uint8_t>{0, 1, 2, 254, 255}));
  in.push_back(make_tensor_data<int8_t>("i8", {1, 1, 3}, std::vector<int8_t>{-128, 0, 127}));
  in.push_back(TensorData{"h", DType::F16, {2}, to_bytes({0x00, 0x3E, 0x00, 0xC0})});  // 1.5, -2.0
  in.push_back(TensorData{"b", DType::BF16, {1}, to_bytes({0x80, 0x3F})});             // 1.0
  in.push_back(TensorData{"m", DType::Bool, {2}, to_bytes({1, 0})});
  in.push_back(make_tensor_data<int64_t>("scalar", {}, std::vector<int64_t>{42}));
  const std::map<std::string, std::string> meta{{"format", "pt"}, {"note", "héllo"}};
  write_safetensors(path, in, meta);

  auto f = SafetensorsFile::open(path);
  EXPECT_EQ(f.path(), path);
  EXPECT_EQ(f.metadata(), meta);
  EXPECT_EQ(names_of(f), (std::vector<std::string>{"w", "d", "i32", "i64", "empty", "u8", "i8", "h",
                                                   "b", "m", "scalar"}));
  for (const TensorData& t : in) {
    const SafeTensor& r = f.at(t.name);
    EXPECT_EQ(r.dtype, t.dtype) << t.name;
    EXPECT_EQ(r.shape, t.shape) << t.name;
    ASSERT_EQ(r.data.size(), t.bytes.size()) << t.name;
    EXPECT_TRUE(std::equal(r.data.begin(), r.data.end(), t.bytes.begin())) << t.name;
  }
  EXPECT_EQ(values_of<float>(f.at("w")), (std::vector<float>{1, 2, 3, 4, 5, -6.5f}));
  EXPECT_EQ(values_of<double>(f.at("d")), (std::vector<double>{0.1, -1e300}));
  EXPECT_EQ(values_of<int64_t>(f.at("i64")), (std::vector<int64_t>{-9000000000LL, 7}));
  EXPECT_EQ(values_of<int64_t>(f.at("scalar")), (std::vector<int64_t>{42}));
  EXPECT_TRUE(f.at("empty").data.empty());
}

TEST(Safetensors, WriterLayout) {
  TempDir tmp;
  const std::string path = tmp.file("layout.safetensors");
  std::vector<TensorData> in;
  in.push_back(make_tensor_data<uint8_t>("z_first", {3}, std::vector<uint8_t>{1, 2, 3}));
  in.push_back(make_tensor_data<float>("a_second", {1}, std::vector<float>{2.0f}));
  write_safetensors(path, in, {{"k", "v"}});
  const std::string bytes = test::read_bytes(path);
  ASSERT_GE(bytes.size(), 8u);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  ASSERT_EQ(bytes.size(), 8 + n + 3 + 4);
  const std::string header = bytes.substr(8, n);
  // Given order, offsets contiguous, padding is trailing spaces only.
  auto j = nlohmann::ordered_json::parse(header);
  std::vector<std::string> keys;
  for (const auto& [k, v] : j.items()) keys.push_back(k);
  EXPECT_EQ(keys, (std::vector<std::string>{"__metadata__", "z_first", "a_second"}));
  EXPECT_EQ(j["z_first"]["data_offsets"], nlohmann::ordered_json::parse("[0, 3]"));
  EXPECT_EQ(j["a_second"]["data_offsets"], nlohmann::ordered_json::parse("[3, 7]"));
  EXPECT_EQ(j["a_second"]["dtype"], "F32");
  EXPECT_EQ(header.find_last_not_of(' '), header.rfind('}'));
  EXPECT_EQ(bytes.substr(8 + n),
            std::string("\x01\x02\x03\x00\x00\x00\x40", 7));  // 2.0f = 0x40000000
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(Safetensors, NoMetadataKeyWhenEmptyAndEmptyFile) {
  TempDir tmp;
  const std::string path = tmp.file("empty.safetensors");
  write_safetensors(path, {});
  const std::string bytes = test::read_bytes(path);
  EXPECT_EQ(bytes, test::u64_le(8) + "{}      ");
  auto f = SafetensorsFile::open(path);
  EXPECT_TRUE(f.tensors().empty());
  EXPECT_TRUE(f.metadata().empty());
}

TEST(Safetensors, ReadsPythonWrittenFile) {
  const std::string path = std::string(LUMINAL_FIXTURES) + "/io/python_written.safetensors";
  auto f = SafetensorsFile::open(path);
  // Python's writer orders by dtype size then name; tensors() follows the data offsets.
  EXPECT_EQ(names_of(f), (std::vector<std::string>{"ids", "bias", "empty", "scalar", "weight",
                                                   "counts", "half", "small", "bytes", "mask"}));
  EXPECT_EQ(f.metadata(), (std::map<std::string, std::string>{{"format", "np"},
                                                              {"source", "make_io_fixture.py"}}));

  const SafeTensor& w = f.at("weight");
  EXPECT_EQ(w.dtype, DType::F32);
  EXPECT_EQ(w.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(values_of<float>(w), (std::vector<float>{1.0f, -2.0f, 0.5f, 3.25f, 0.0f, -0.125f}));
  EXPECT_EQ(f.at("bias").dtype, DType::F64);
  EXPECT_EQ(values_of<double>(f.at("bias")), (std::vector<double>{0.1, -7.5}));
  EXPECT_EQ(f.at("ids").dtype, DType::I64);
  EXPECT_EQ(values_of<int64_t>(f.at("ids")), (std::vector<int64_t>{0, 1, -1, 9007199254740993LL}));
  EXPECT_EQ(f.at("counts").shape, (std::vector<int64_t>{2, 2}));
  EXPECT_EQ(values_of<int32_t>(f.at("counts")),
            (std::vector<int32_t>{1, -2, 2147483647, -2147483647 - 1}));
  EXPECT_EQ(f.at("half").dtype, DType::F16);
  EXPECT_EQ(values_of<uint16_t>(f.at("half")), (std::vector<uint16_t>{0x3E00, 0xC000, 0x3400}));
  EXPECT_EQ(f.at("bytes").dtype, DType::U8);
  EXPECT_EQ(values_of<uint8_t>(f.at("bytes")), (std::vector<uint8_t>{0, 127, 255}));
  EXPECT_EQ(f.at("small").dtype, DType::I8);
  EXPECT_EQ(values_of<int8_t>(f.at("small")), (std::vector<int8_t>{-128, 0, 127}));
  EXPECT_EQ(f.at("mask").dtype, DType::Bool);
  EXPECT_EQ(values_of<uint8_t>(f.at("mask")), (std::vector<uint8_t>{1, 0, 1}));
  EXPECT_EQ(f.at("empty").shape, (std::vector<int64_t>{0, 4}));
  EXPECT_TRUE(f.at("empty").data.empty());
  EXPECT_TRUE(f.at("scalar").shape.empty());
  EXPECT_EQ(values_of<float>(f.at("scalar")), (std::vector<float>{42.0f}));
}

TEST(Safetensors, ReadsHandBuiltFileWithPaddingAndTrailingBytes) {
  TempDir tmp;
  const std::string path = tmp.file("hand.safetensors");
  // Tensor b comes first in the header but second in the data; 2 unreferenced trailing bytes.
  const std::string header =
      R"({"b":{"dtype":"I32","shape":[1],"data_offsets":[2,6]},"a":{"dtype":"U8","shape":[2],"data_offsets":[0,2]}}   )";
  test::write_bytes(path,
                    test::st_bytes(header, std::string("\x07\x09\x05\x00\x00\x00\xAA\xBB", 8)));
  auto f = SafetensorsFile::open(path);
  EXPECT_EQ(names_of(f), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(values_of<uint8_t>(f.at("a")), (std::vector<uint8_t>{7, 9}));
  EXPECT_EQ(values_of<int32_t>(f.at("b")),
            (std::vector<int32_t>{5}));  // unaligned: file offset 8 + N + 2
}

TEST(Safetensors, FindAndAt) {
  TempDir tmp;
  const std::string path = tmp.file("find.safetensors");
  write_safetensors(path, {make_tensor_data<float>("x", {1}, std::vector<float>{1})});
  auto f = SafetensorsFile::open(path);
  ASSERT_NE(f.find("x"), nullptr);
  EXPECT_EQ(f.find("x")->name, "x");
  EXPECT_EQ(f.find("y"), nullptr);
  try {
    f.at("y");
    FAIL() << "expected a throw";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "[safetensors] " + path + ": no tensor 'y'");
  }
}

TEST(Safetensors, MoveKeepsDataValid) {
  TempDir tmp;
  const std::string path = tmp.file("move.safetensors");
  write_safetensors(path, {make_tensor_data<int32_t>("x", {2}, std::vector<int32_t>{3, 4})});
  auto a = SafetensorsFile::open(path);
  SafetensorsFile b(std::move(a));
  EXPECT_EQ(values_of<int32_t>(b.at("x")), (std::vector<int32_t>{3, 4}));
  auto c = SafetensorsFile::open(path);
  c = std::move(b);  // unmaps c's own mapping, takes b's
  EXPECT_EQ(values_of<int32_t>(c.at("x")), (std::vector<int32_t>{3, 4}));
  EXPECT_EQ(c.path(), path);
}

TEST(Safetensors, OverwritesExistingFile) {
  TempDir tmp;
  const std::string path = tmp.file("over.safetensors");
  write_safetensors(path, {make_tensor_data<float>("old", {3}, std::vector<float>{1, 2, 3})});
  write_safetensors(path, {make_tensor_data<float>("new", {1}, std::vector<float>{9})});
  auto f = SafetensorsFile::open(path);
  EXPECT_EQ(names_of(f), (std::vector<std::string>{"new"}));
}

/// Runs write_safetensors expecting a runtime_error; checks the message and that no file is left.
std::string write_error(const std::string& path, const std::vector<TensorData>& in,
                        const std::map<std::string, std::string>& meta = {}) {
  try {
    write_safetensors(path, in, meta);
  } catch (const std::runtime_error& e) {
    EXPECT_FALSE(std::filesystem::exists(path)) << path;
    EXPECT_FALSE(std::filesystem::exists(path + ".tmp")) << path;
    return e.what();
  }
  ADD_FAILURE() << "write_safetensors did not throw";
  return {};
}

TEST(SafetensorsWrite, ByteSizeMismatch) {
  TempDir tmp;
  const std::string path = tmp.file("bad.safetensors");
  TensorData t{"x", DType::F32, {2, 3}, std::vector<std::byte>(12)};
  EXPECT_EQ(write_error(path, {t}),
            "[safetensors] write " + path + ": tensor 'x' has 12 bytes, shape [2, 3] f32 needs 24");
}

TEST(SafetensorsWrite, DuplicateAndReservedNames) {
  TempDir tmp;
  const std::string path = tmp.file("bad.safetensors");
  auto x = make_tensor_data<float>("x", {1}, std::vector<float>{1});
  EXPECT_TRUE(contains_all(write_error(path, {x, x}), {path, "duplicate tensor name 'x'"}));
  auto m = make_tensor_data<float>("__metadata__", {1}, std::vector<float>{1});
  EXPECT_TRUE(contains_all(write_error(path, {m}), {path, "'__metadata__' is reserved"}));
}

TEST(SafetensorsWrite, NegativeDimAndInvalidUtf8) {
  TempDir tmp;
  const std::string path = tmp.file("bad.safetensors");
  TensorData neg{"n", DType::F32, {-1, 2}, {}};
  EXPECT_TRUE(contains_all(write_error(path, {neg}), {path, "tensor 'n': negative dim -1"}));
  auto bad_name = make_tensor_data<float>("\xff", {1}, std::vector<float>{1});
  EXPECT_TRUE(contains_all(write_error(path, {bad_name}), {path, "cannot encode header"}));
  EXPECT_TRUE(contains_all(write_error(path, {}, {{"k", "\xc3"}}), {"cannot encode header"}));
}

TEST(SafetensorsWrite, MissingDirectory) {
  TempDir tmp;
  const std::string path = tmp.file("no/such/dir/x.safetensors");
  EXPECT_TRUE(contains_all(write_error(path, {}), {path, "cannot create", "No such file"}));
}

TEST(SafetensorsWrite, FailedWriteKeepsOldFile) {
  TempDir tmp;
  const std::string path = tmp.file("keep.safetensors");
  write_safetensors(path, {make_tensor_data<float>("old", {1}, std::vector<float>{1})});
  TensorData bad{"x", DType::F32, {2}, std::vector<std::byte>(4)};
  EXPECT_THROW(write_safetensors(path, {bad}), std::runtime_error);
  EXPECT_NE(SafetensorsFile::open(path).find("old"), nullptr);
}

TEST(SafetensorsWrite, FailedRenameRemovesTempFile) {
  TempDir tmp;
  const std::string path = tmp.file("taken");
  std::filesystem::create_directories(path + "/child");  // rename onto a non-empty directory fails
  try {
    write_safetensors(path, {make_tensor_data<float>("x", {1}, std::vector<float>{1})});
    FAIL() << "expected a throw";
  } catch (const std::runtime_error& e) {
    EXPECT_TRUE(contains_all(e.what(), {"[safetensors] write " + path + ": "}));
  }
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST(MakeTensorData, DeducesDtype) {
  EXPECT_EQ(make_tensor_data<float>("a", {1}, std::vector<float>{1}).dtype, DType::F32);
  EXPECT_EQ(make_tensor_data<double>("a", {1}, std::vector<double>{1}).dtype, DType::F64);
  EXPECT_EQ(make_tensor_data<int32_t>("a", {1}, std::vector<int32_t>{1}).dtype, DType::I32);
  EXPECT_EQ(make_tensor_data<int64_t>("a", {1}, std::vector<int64_t>{1}).dtype, DType::I64);
  EXPECT_EQ(make_tensor_data<uint8_t>("a", {1}, std::vector<uint8_t>{1}).dtype, DType::U8);
  EXPECT_EQ(make_tensor_data<int8_t>("a", {1}, std::vector<int8_t>{1}).dtype, DType::I8);
  auto t = make_tensor_data<int32_t>("a", {2}, std::vector<int32_t>{1, -1});
  EXPECT_EQ(t.bytes, to_bytes({1, 0, 0, 0, 0xFF, 0xFF, 0xFF, 0xFF}));
}

TEST(MakeTensorData, CountMismatchThrows) {
  try {
    make_tensor_data<float>("w", {2, 3}, std::vector<float>(5));
    FAIL() << "expected a throw";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains_all(e.what(), {"[safetensors]", "'w'", "5 values for shape [2, 3]"}));
  }
  EXPECT_THROW(make_tensor_data<float>("w", {-1}, std::vector<float>{}), std::invalid_argument);
}

}  // namespace
}  // namespace luminal
