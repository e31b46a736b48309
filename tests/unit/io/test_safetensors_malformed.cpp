// safetensors reader on bad input: every problem gets a clear "[safetensors] <path>: ..." error.
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "luminal/safetensors.h"
#include "unit/io/io_test_util.h"

namespace luminal {
namespace {

using test::contains_all;
using test::st_bytes;
using test::TempDir;
using test::u64_le;

/// Opens path expecting std::runtime_error; returns its message ("" after a reported failure).
std::string open_error(const std::string& path) {
  try {
    SafetensorsFile::open(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type: " << e.what();
    return {};
  }
  ADD_FAILURE() << "open(" << path << ") did not throw";
  return {};
}

/// One bad header: the data section and the words its error message must contain.
struct BadHeaderCase {
  const char* label;
  std::string header;
  std::string data;
  std::vector<std::string> words;
};

/// Makes gtest print the case label instead of raw bytes.
void PrintTo(const BadHeaderCase& c, std::ostream* os) { *os << c.label; }

class SafetensorsBadHeader : public ::testing::TestWithParam<BadHeaderCase> {};

TEST_P(SafetensorsBadHeader, ThrowsNamingPathAndProblem) {
  TempDir tmp;
  const std::string path = tmp.file("bad.safetensors");
  test::write_bytes(path, st_bytes(GetParam().header, GetParam().data));
  const std::string msg = open_error(path);
  EXPECT_TRUE(contains_all(msg, {"[safetensors] " + path + ": "}));
  for (const std::string& w : GetParam().words) EXPECT_TRUE(contains_all(msg, {w}));
}

const std::string k24(24, '\0');

// Hand-written headers, one problem each; a valid entry is
// {"dtype":"F32","shape":[2,3],"data_offsets":[0,24]}.
INSTANTIATE_TEST_SUITE_P(
    Cases, SafetensorsBadHeader,
    ::testing::Values(
        BadHeaderCase{"InvalidJson", R"({"w": )", "", {"invalid JSON header", "parse error"}},
        BadHeaderCase{"EmptyHeader", "", "", {"invalid JSON header"}},
        BadHeaderCase{"TrailingGarbage", R"({} x)", "", {"invalid JSON header"}},
        BadHeaderCase{
            "InvalidUtf8", "{\"w\xff\": 1}", "", {"invalid JSON header", "last read: '\"w\\xff'"}},
        BadHeaderCase{"NotAnObject", "[1, 2]", "", {"header must be a JSON object, got array"}},
        BadHeaderCase{"EntryNotObject",
                      R"({"w": 3})",
                      "",
                      {"tensor 'w': entry must be an object, got number"}},
        BadHeaderCase{"MissingDtype",
                      R"({"w":{"shape":[2,3],"data_offsets":[0,24]}})",
                      k24,
                      {"tensor 'w': missing 'dtype'"}},
        BadHeaderCase{"MissingShape",
                      R"({"w":{"dtype":"F32","data_offsets":[0,24]}})",
                      k24,
                      {"tensor 'w': missing 'shape'"}},
        BadHeaderCase{"MissingOffsets",
                      R"({"w":{"dtype":"F32","shape":[2,3]}})",
                      k24,
                      {"tensor 'w': missing 'data_offsets'"}},
        BadHeaderCase{"DtypeNotString",
                      R"({"w":{"dtype":7,"shape":[2,3],"data_offsets":[0,24]}})",
                      k24,
                      {"tensor 'w': 'dtype' must be a string"}},
        BadHeaderCase{"ShapeNotArray",
                      R"({"w":{"dtype":"F32","shape":"2x3","data_offsets":[0,24]}})",
                      k24,
                      {"tensor 'w': 'shape' must be an array of integers"}},
        BadHeaderCase{"ShapeFloatDim",
                      R"({"w":{"dtype":"F32","shape":[2,3.0],"data_offsets":[0,24]}})",
                      k24,
                      {"tensor 'w': 'shape' must be an array of integers"}},
        BadHeaderCase{
            "ShapeDimTooBigForInt64",
            R"({"w":{"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,24]}})",
            k24,
            {"tensor 'w': 'shape' must be an array of integers"}},
        BadHeaderCase{"OffsetsNotPair",
                      R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0]}})",
                      k24,
                      {"tensor 'w': 'data_offsets' must be [begin, end] integers"}},
        BadHeaderCase{"OffsetsNotIntegers",
                      R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,"24"]}})",
                      k24,
                      {"tensor 'w': 'data_offsets' must be [begin, end] integers"}},
        BadHeaderCase{"UnsupportedDtype",
                      R"({"w":{"dtype":"F8_E4M3","shape":[2,3],"data_offsets":[0,6]}})",
                      k24,
                      {"tensor 'w': unsupported dtype 'F8_E4M3'"}},
        BadHeaderCase{"LowercaseDtype",
                      R"({"w":{"dtype":"f32","shape":[2,3],"data_offsets":[0,24]}})",
                      k24,
                      {"tensor 'w': unsupported dtype 'f32'"}},
        BadHeaderCase{"NegativeDim",
                      R"({"w":{"dtype":"F32","shape":[2,-3],"data_offsets":[0,24]}})",
                      k24,
                      {"tensor 'w': negative dim -3 in shape [2, -3]"}},
        BadHeaderCase{"NegativeOffset",
                      R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[-8,16]}})",
                      k24,
                      {"tensor 'w': negative data_offsets"}},
        BadHeaderCase{"BeginAfterEnd",
                      R"({"w":{"dtype":"F32","shape":[0],"data_offsets":[24,0]}})",
                      k24,
                      {"tensor 'w': data_offsets [24, 0] have begin > end"}},
        BadHeaderCase{
            "EndOutOfRange",
            R"({"w":{"dtype":"F32","shape":[100],"data_offsets":[0,400]}})",
            std::string(64, '\0'),
            {"tensor 'w': data_offsets [0, 400] out of range (data section is 64 bytes)"}},
        BadHeaderCase{
            "HugeOffsets",
            R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551614,18446744073709551615]}})",
            k24,
            {"tensor 'w'", "out of range (data section is 24 bytes)"}},
        BadHeaderCase{
            "SizeMismatch",
            R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,12]}})",
            k24,
            {"tensor 'w': shape [2, 3] f32 needs 24 bytes, data_offsets [0, 12] hold 12"}},
        BadHeaderCase{"SizeMismatchDtype",
                      R"({"w":{"dtype":"F64","shape":[2,3],"data_offsets":[0,24]}})",
                      k24,
                      {"tensor 'w': shape [2, 3] f64 needs 48 bytes"}},
        BadHeaderCase{
            "ShapeOverflow",
            R"({"w":{"dtype":"F32","shape":[4611686018427387904,8],"data_offsets":[0,0]}})",
            "",
            {"tensor 'w': shape [4611686018427387904, 8] f32 is too large"}},
        BadHeaderCase{"BytesOverflow",
                      R"({"w":{"dtype":"F64","shape":[4611686018427387904],"data_offsets":[0,0]}})",
                      "",
                      {"tensor 'w'", "is too large"}},
        BadHeaderCase{
            "Overlap",
            R"({"a":{"dtype":"F32","shape":[4],"data_offsets":[0,16]},"b":{"dtype":"F32","shape":[4],"data_offsets":[8,24]}})",
            k24,
            {"tensors 'a' and 'b' overlap"}},
        BadHeaderCase{
            "OverlapSameRange",
            R"({"b":{"dtype":"U8","shape":[4],"data_offsets":[4,8]},"a":{"dtype":"I32","shape":[1],"data_offsets":[4,8]}})",
            k24,
            {"overlap", "'a'", "'b'"}},
        BadHeaderCase{
            "OverlapContained",
            R"({"a":{"dtype":"U8","shape":[20],"data_offsets":[0,20]},"b":{"dtype":"U8","shape":[2],"data_offsets":[4,6]}})",
            k24,
            {"tensors 'a' and 'b' overlap"}},
        BadHeaderCase{
            "DuplicateName",
            R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"w":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})",
            k24,
            {"duplicate tensor name 'w'"}},
        BadHeaderCase{"MetadataValueNotString",
                      R"({"__metadata__":{"ok":"x","epoch":3}})",
                      "",
                      {"metadata 'epoch' must be a string, got number"}},
        BadHeaderCase{"MetadataNotObject",
                      R"({"__metadata__":["a"]})",
                      "",
                      {"'__metadata__' must be an object, got array"}}),
    [](const auto& info) { return std::string(info.param.label); });

TEST(SafetensorsMalformed, DeeplyNestedValues) {
  TempDir tmp;
  const std::string path = tmp.file("deep.safetensors");
  const std::string deep = std::string(200000, '[') + std::string(200000, ']');
  test::write_bytes(
      path, st_bytes(R"({"w":{"dtype":"F32","shape":[)" + deep + R"(],"data_offsets":[0,0]}})"));
  EXPECT_TRUE(contains_all(open_error(path),
                           {"tensor 'w': 'shape' must be an array of integers, got array"}));
  test::write_bytes(path,
                    st_bytes(R"({"w":{"dtype":"F32","shape":[],"data_offsets":)" + deep + "}}"));
  EXPECT_TRUE(contains_all(
      open_error(path), {"tensor 'w': 'data_offsets' must be [begin, end] integers, got array"}));
  test::write_bytes(path, st_bytes(R"({"__metadata__":{"k":)" + deep + "}}"));
  EXPECT_TRUE(contains_all(open_error(path), {"metadata 'k' must be a string, got array"}));
}

TEST(SafetensorsMalformed, MissingFile) {
  TempDir tmp;
  const std::string path = tmp.file("nope.safetensors");
  EXPECT_TRUE(
      contains_all(open_error(path), {"[safetensors] " + path + ": cannot open: No such file"}));
}

TEST(SafetensorsMalformed, Directory) {
  TempDir tmp;
  const std::string path = tmp.file("");
  EXPECT_TRUE(contains_all(open_error(path), {"[safetensors] " + path + ": not a regular file"}));
}

TEST(SafetensorsMalformed, Truncated) {
  TempDir tmp;
  const std::string path = tmp.file("short.safetensors");
  test::write_bytes(path, "abcde");
  EXPECT_EQ(open_error(path), "[safetensors] " + path + ": truncated: 5 bytes, need at least 8");
  test::write_bytes(path, "");
  EXPECT_EQ(open_error(path), "[safetensors] " + path + ": truncated: 0 bytes, need at least 8");
}

TEST(SafetensorsMalformed, HeaderLengthExceedsFile) {
  TempDir tmp;
  const std::string path = tmp.file("len.safetensors");
  test::write_bytes(path, u64_le(1000) + std::string(56, ' '));
  EXPECT_EQ(open_error(path),
            "[safetensors] " + path + ": header length 1000 exceeds file size 64");
  test::write_bytes(path, u64_le(UINT64_MAX) + "{}");  // size - 8 must not wrap
  EXPECT_TRUE(contains_all(open_error(path),
                           {path, "header length 18446744073709551615 exceeds file size 10"}));
}

TEST(SafetensorsMalformed, HeaderLengthOverLimit) {
  TempDir tmp;
  const std::string path = tmp.file("huge.safetensors");
  const uint64_t len = 100'000'001;
  test::write_bytes(path, u64_le(len));
  // A sparse file: the header length fits the file but is over the 100 MB cap, so parsing never
  // starts.
  std::filesystem::resize_file(path, 8 + len);
  EXPECT_TRUE(contains_all(open_error(path),
                           {path, "header length 100000001 exceeds the limit 100000000"}));
}

// Valid corner cases that must not be rejected.
TEST(SafetensorsMalformed, AcceptsZeroElementAndEdgeOffsets) {
  TempDir tmp;
  const std::string path = tmp.file("ok.safetensors");
  // Zero-byte tensors hold nothing, so one inside another's range or at the very end is fine.
  const std::string header =
      R"({"a":{"dtype":"U8","shape":[4],"data_offsets":[0,4]},"z":{"dtype":"F32","shape":[0,7],"data_offsets":[2,2]},)"
      R"("e":{"dtype":"I64","shape":[3,0],"data_offsets":[4,4]},"__metadata__":{}}        )";
  test::write_bytes(path, st_bytes(header, "abcd"));
  auto f = SafetensorsFile::open(path);
  ASSERT_EQ(f.tensors().size(), 3u);
  EXPECT_EQ(f.at("z").shape, (std::vector<int64_t>{0, 7}));
  EXPECT_TRUE(f.at("z").data.empty());
  EXPECT_TRUE(f.at("e").data.empty());
  EXPECT_EQ(f.at("a").data.size(), 4u);
  EXPECT_TRUE(f.metadata().empty());
}

TEST(SafetensorsMalformed, IgnoresUnknownEntryKeys) {
  TempDir tmp;
  const std::string path = tmp.file("extra.safetensors");
  test::write_bytes(
      path, st_bytes(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[0,1],"note":1}})", "x"));
  EXPECT_EQ(SafetensorsFile::open(path).at("w").data.size(), 1u);
}

/// Opens path; any outcome but success or std::runtime_error fails the test. On success, spans stay
/// in the file.
void open_must_not_crash(const std::string& path, size_t file_size, const std::string& what) {
  try {
    auto f = SafetensorsFile::open(path);
    for (const SafeTensor& t : f.tensors()) ASSERT_LE(t.data.size(), file_size) << what;
  } catch (const std::runtime_error& e) {
    ASSERT_NE(std::string(e.what()).find(path), std::string::npos) << what << ": " << e.what();
  } catch (...) {
    FAIL() << what << ": exception other than std::runtime_error";
  }
}

std::string valid_file_bytes(const TempDir& tmp) {
  const std::string path = tmp.file("valid.safetensors");
  std::vector<TensorData> in;
  in.push_back(make_tensor_data<float>("w", {2, 3}, std::vector<float>{1, 2, 3, 4, 5, 6}));
  in.push_back(make_tensor_data<int64_t>("idx", {2}, std::vector<int64_t>{7, 8}));
  in.push_back(make_tensor_data<uint8_t>("empty", {0}, std::vector<uint8_t>{}));
  write_safetensors(path, in, {{"k", "v"}});
  return test::read_bytes(path);
}

TEST(SafetensorsFuzz, EveryTruncation) {
  TempDir tmp;
  const std::string full = valid_file_bytes(tmp);
  const std::string path = tmp.file("cut.safetensors");
  test::write_bytes(path, full);
  for (size_t len = full.size(); len-- > 0;) {
    std::filesystem::resize_file(path, len);  // shrinking in place is cheaper than rewriting
    open_must_not_crash(path, len, "length " + std::to_string(len));
    // The last tensor ends at the end of the file, so every cut is detectable.
    EXPECT_THROW(SafetensorsFile::open(path), std::runtime_error) << "length " << len;
  }
}

TEST(SafetensorsFuzz, EveryByteCorrupted) {
  TempDir tmp;
  const std::string full = valid_file_bytes(tmp);
  const std::string path = tmp.file("flip.safetensors");
  uint64_t header_len = 0;
  std::memcpy(&header_len, full.data(), 8);
  test::write_bytes(path, full);
  // Patch one byte in place and restore it (cheaper than rewriting the file each time). Bytes of
  // the length and the header only; the data section has no structure to corrupt.
  std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
  auto put = [&](size_t i, char c) {
    f.seekp(static_cast<std::streamoff>(i));
    f.put(c);
    f.flush();
    ASSERT_TRUE(f.good());
  };
  for (size_t i = 0; i < 8 + header_len; ++i) {
    for (char c : {'\0', '\xff', '"', '{', '9', '-'}) {
      put(i, c);
      open_must_not_crash(path, full.size(),
                          "byte " + std::to_string(i) + " = " + std::to_string(int(c)));
    }
    put(i, full[i]);
  }
}

}  // namespace
}  // namespace luminal
