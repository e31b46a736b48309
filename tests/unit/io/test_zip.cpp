// ZIP reader: STORED (zero-copy), DEFLATED, ZIP64, and a clear "[zip] <path>: ..." error for every
// malformed archive.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "expect_error.h"
#include "io/zip_reader.h"
#include "unit/io/io_test_util.h"
#include "unit/io/test_zip_builder.h"

namespace luminal {
namespace {

using test::build_zip;
using test::expect_error;
using test::le;
using test::TempDir;
using test::ZipFile;

std::string as_string(const io::ZipBytes& b) {
  return std::string(reinterpret_cast<const char*>(b.data.data()), b.data.size());
}

/// Writes `bytes` to a fresh file and opens it.
io::ZipReader open_bytes(const TempDir& tmp, const std::string& bytes) {
  const std::string path = tmp.file("a.zip");
  test::write_bytes(path, bytes);
  return io::ZipReader::open(path);
}

const std::vector<ZipFile> kFiles = {
    {"pkg/archive_format", "pt2"},
    {"pkg/data/weights/weight_0", std::string(1000, 'w') + "end"},
    {"pkg/empty", ""},
    {"pkg/models/model.json", std::string(70000, 'j') + "tail", true},  // two DEFLATE blocks
};

class ZipLayouts : public ::testing::TestWithParam<bool> {};

TEST_P(ZipLayouts, ReadsEveryEntry) {
  TempDir tmp;
  const io::ZipReader z = open_bytes(tmp, build_zip(kFiles, /*zip64=*/GetParam()));
  ASSERT_EQ(z.entries().size(), kFiles.size());
  for (size_t i = 0; i < kFiles.size(); ++i) {
    EXPECT_EQ(z.entries()[i].name, kFiles[i].name);
    const io::ZipBytes b = z.read(kFiles[i].name);
    EXPECT_EQ(as_string(b), kFiles[i].data) << kFiles[i].name;
    EXPECT_EQ(b.mapped(), !kFiles[i].deflate) << kFiles[i].name;
  }
  EXPECT_EQ(z.find("pkg/nope"), nullptr);
  expect_error([&] { z.read("pkg/nope"); }, {"[zip] ", "no entry 'pkg/nope'"});
}

INSTANTIATE_TEST_SUITE_P(PlainAndZip64, ZipLayouts, ::testing::Bool());

TEST(Zip, StoredEntriesAreZeroCopySpansIntoTheFile) {
  TempDir tmp;
  const std::string bytes = build_zip(kFiles);
  const io::ZipReader z = open_bytes(tmp, bytes);
  const io::ZipEntry* e = z.find("pkg/data/weights/weight_0");
  ASSERT_NE(e, nullptr);
  // The entry's bytes sit at data_offset in the file: the span must show exactly those.
  EXPECT_EQ(bytes.substr(e->data_offset, 4), "wwww");
  const io::ZipBytes b = z.read(*e);
  const io::ZipBytes again = z.read(*e);
  EXPECT_EQ(b.data.data(), again.data.data());
}

TEST(Zip, ArchiveCommentIsSkipped) {
  TempDir tmp;
  std::string bytes = build_zip(kFiles);
  bytes.replace(bytes.size() - 2, 2, le<uint16_t>(5));
  bytes += "hello";
  EXPECT_EQ(open_bytes(tmp, bytes).entries().size(), kFiles.size());
}

/// The offset of the central directory's first header in an archive built from kFiles.
size_t central_offset(const std::string& bytes) { return bytes.find("PK\x01\x02"); }

struct Corruption {
  const char* label;
  void (*apply)(std::string&);
  std::vector<std::string> words;
};

void PrintTo(const Corruption& c, std::ostream* os) { *os << c.label; }

class ZipMalformed : public ::testing::TestWithParam<Corruption> {};

TEST_P(ZipMalformed, ThrowsNamingPathAndProblem) {
  TempDir tmp;
  std::string bytes = build_zip(kFiles);
  GetParam().apply(bytes);
  const std::string path = tmp.file("a.zip");
  test::write_bytes(path, bytes);
  std::vector<std::string> words = GetParam().words;
  words.insert(words.begin(), "[zip] " + path + ": ");
  expect_error(
      [&] {
        io::ZipReader z = io::ZipReader::open(path);
        for (const io::ZipEntry& e : z.entries()) z.read(e);
      },
      words);
}

const Corruption kCorruptions[] = {
    {"empty", [](std::string& b) { b.clear(); }, {"truncated"}},
    {"no_eocd", [](std::string& b) { b.resize(b.size() - 22); }, {"no end-of-central-directory"}},
    {"truncated_tail",
     [](std::string& b) { b.resize(b.size() - 1); },
     {"no end-of-central-directory"}},
    {"cd_out_of_bounds",
     [](std::string& b) { b.replace(b.size() - 6, 4, le<uint32_t>(uint32_t(b.size()))); },
     {"central directory", "out of bounds"}},
    {"too_many_entries",
     [](std::string& b) { b.replace(b.size() - 12, 2, le<uint16_t>(500)); },
     {"claims 500 entries"}},
    {"bad_cd_signature",
     [](std::string& b) { b[central_offset(b)] = 'X'; },
     {"bad central directory"}},
    {"bad_method",
     [](std::string& b) { b.replace(central_offset(b) + 10, 2, le<uint16_t>(12)); },
     {"unsupported compression method 12"}},
    {"encrypted",
     [](std::string& b) { b.replace(central_offset(b) + 8, 2, le<uint16_t>(1)); },
     {"encrypted"}},
    {"entry_out_of_bounds",
     [](std::string& b) {  // a 1 MB STORED size for the second entry
       size_t p = b.find("PK\x01\x02", central_offset(b) + 4);
       b.replace(p + 20, 8, le<uint32_t>(1 << 20) + le<uint32_t>(1 << 20));
     },
     {"pkg/data/weights/weight_0", "out of bounds"}},
    {"local_header_offset",
     [](std::string& b) { b.replace(central_offset(b) + 42, 4, le<uint32_t>(7)); },
     {"no local header"}},
    {"local_name_differs", [](std::string& b) { b[30] = 'X'; }, {"local header names"}},
    {"crc_mismatch",
     [](std::string& b) { b[b.find("wwww") + 10] = 'x'; },
     {"pkg/data/weights/weight_0", "CRC-32 mismatch"}},
    {"deflate_corrupt",
     [](std::string& b) { b[b.find("jjjj") - 5] = 6; },  // block type 3 is reserved
     {"pkg/models/model.json", "corrupt DEFLATE"}},
    {"deflate_size_lies",
     [](std::string& b) {
       size_t p = b.find("PK\x01\x02", central_offset(b) + 4);
       p = b.find("PK\x01\x02", p + 4);
       p = b.find("PK\x01\x02", p + 4);
       b.replace(p + 24, 4, le<uint32_t>(70000));  // uncompressed size one block short
     },
     {"pkg/models/model.json", "size mismatch"}},
};

INSTANTIATE_TEST_SUITE_P(Cases, ZipMalformed, ::testing::ValuesIn(kCorruptions),
                         [](const auto& info) { return std::string(info.param.label); });

TEST(Zip, DuplicateNamesAreRefused) {
  TempDir tmp;
  std::string bytes = build_zip({{"x/one", "1"}, {"x/two", "2"}});
  for (size_t p; (p = bytes.find("x/two")) != std::string::npos;) bytes.replace(p, 5, "x/one");
  const std::string path = tmp.file("a.zip");
  test::write_bytes(path, bytes);
  expect_error([&] { io::ZipReader::open(path); }, {"[zip] ", "duplicate entry 'x/one'"});
}

TEST(Zip, MissingFileIsAClearError) {
  TempDir tmp;
  expect_error([&] { io::ZipReader::open(tmp.file("nope.zip"), "pt2"); },
               {"[pt2] ", "nope.zip", "cannot open"});
}

}  // namespace
}  // namespace luminal
