// A read-only ZIP archive over a memory mapping (internal; the .pt2 reader's container layer).
// Supports what torch.export.save writes and what common tools write: ZIP64, STORED entries (handed
// out zero-copy as spans into the mapping) and DEFLATED entries (inflated with zlib). CRC-32 is
// checked on every read.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "io/mapped_file.h"

namespace luminal::io {

/// One file in the archive's central directory.
struct ZipEntry {
  std::string name;
  /// 0 = STORED, 8 = DEFLATED (others are refused when the central directory is read).
  uint16_t method = 0;
  uint32_t crc32 = 0;
  uint64_t compressed_size = 0;
  uint64_t size = 0;
  /// Offset of the entry's bytes (after its local header) in the file.
  uint64_t data_offset = 0;
};

/// An entry's bytes: a span into the mapping (STORED) or into `owned` (DEFLATED).
struct ZipBytes {
  std::span<const std::byte> data;
  /// Holds inflated bytes; null when `data` points into the mapping.
  std::shared_ptr<const std::vector<std::byte>> owned;
  /// True when `data` points into the file mapping (zero-copy).
  bool mapped() const { return owned == nullptr; }
};

/// A validated ZIP archive; move-only. Errors read "[<tag>] <path>: <problem>".
class ZipReader {
 public:
  /// Maps `path` and reads its central directory (every entry's header and bounds are checked).
  static ZipReader open(const std::string& path, const char* tag = "zip");
  ZipReader(ZipReader&&) noexcept = default;
  ZipReader& operator=(ZipReader&&) noexcept = default;

  /// All entries in central-directory order.
  const std::vector<ZipEntry>& entries() const { return entries_; }
  /// The entry with this exact name, or nullptr.
  const ZipEntry* find(std::string_view name) const;
  /// The entry's bytes, CRC-checked; STORED entries are zero-copy and live as long as this reader.
  ZipBytes read(const ZipEntry& entry) const;
  /// read(*find(name)), or an error naming the missing entry.
  ZipBytes read(std::string_view name) const;
  /// The path it was opened from.
  const std::string& path() const { return path_; }
  /// Throws "[<tag>] <path>: <problem>".
  [[noreturn]] void fail(const std::string& problem) const;

 private:
  ZipReader() = default;
  void read_central_directory();
  std::string path_;
  std::string tag_;
  MappedFile map_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace luminal::io
