// A read-only memory mapping of a whole file (POSIX mmap), shared by the file readers in src/io.
#pragma once

#include <cstddef>
#include <string>

namespace luminal::io {

/// Owns a read-only mapping of a whole file; move-only. An empty file maps to {nullptr, 0}.
class MappedFile {
 public:
  /// Maps `path`; throws "[<tag>] <path>: <problem>" (e.g. "cannot open: No such file ...").
  static MappedFile open(const std::string& path, const char* tag);
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  /// First byte of the mapping (nullptr for an empty file).
  const std::byte* data() const { return static_cast<const std::byte*>(addr_); }
  /// Length of the mapping in bytes (the file size when it was opened).
  size_t size() const { return size_; }
  /// Gives up ownership; the caller must pass the result to unmap().
  void* release();
  /// Unmaps a region returned by release() (no-op for nullptr).
  static void unmap(void* addr, size_t size) noexcept;

 private:
  void* addr_ = nullptr;
  size_t size_ = 0;
};

}  // namespace luminal::io
