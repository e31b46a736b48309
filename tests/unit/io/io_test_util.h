// Test helpers for file readers: a per-test temp dir and raw safetensors byte builders.
#pragma once

#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <string>

#include <gtest/gtest.h>

namespace luminal::test {

/// A fresh directory named after the running test, removed on destruction.
class TempDir {
 public:
  TempDir() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = std::string(info->test_suite_name()) + "." + info->name();
    for (char& c : name) {
      if (c == '/') c = '_';  // parameterized test names contain '/'
    }
    dir_ = std::filesystem::temp_directory_path() /
           ("luminal_io_" + std::to_string(::getpid()) + "_" + name);
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  /// Path of a file inside the dir.
  std::string file(const std::string& name) const { return (dir_ / name).string(); }

 private:
  std::filesystem::path dir_;
};

/// Writes raw bytes to path (truncating).
inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  ASSERT_TRUE(f.good()) << path;
}

/// Reads a whole file.
inline std::string read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

/// The 8-byte little-endian encoding of n.
inline std::string u64_le(uint64_t n) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[i] = static_cast<char>((n >> (8 * i)) & 0xFF);
  return s;
}

/// A safetensors file from header text and data bytes (header length = header.size()).
inline std::string st_bytes(const std::string& header, const std::string& data = {}) {
  return u64_le(header.size()) + header + data;
}

/// Success when `text` contains every word; the failure message shows the text.
inline ::testing::AssertionResult contains_all(const std::string& text,
                                               std::initializer_list<std::string> words) {
  for (const std::string& w : words) {
    if (text.find(w) == std::string::npos) {
      return ::testing::AssertionFailure() << "'" << text << "' does not contain '" << w << "'";
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace luminal::test
