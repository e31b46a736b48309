#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

namespace luminal::io {

namespace {

[[noreturn]] void fail(const char* tag, const std::string& path, const char* what, int err) {
  throw std::runtime_error(fmt::format("[{}] {}: {}: {}", tag, path, what, std::strerror(err)));
}

}  // namespace

MappedFile MappedFile::open(const std::string& path, const char* tag) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail(tag, path, "cannot open", errno);
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int err = errno;
    ::close(fd);
    fail(tag, path, "cannot stat", err);
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw std::runtime_error(fmt::format("[{}] {}: not a regular file", tag, path));
  }
  MappedFile m;
  m.size_ = static_cast<size_t>(st.st_size);
  if (m.size_ > 0) {  // mmap rejects length 0
    void* addr = ::mmap(nullptr, m.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (addr == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      fail(tag, path, "cannot mmap", err);
    }
    m.addr_ = addr;
  }
  ::close(fd);  // the mapping stays valid without the descriptor
  return m;
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : addr_(std::exchange(other.addr_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    unmap(addr_, size_);
    addr_ = std::exchange(other.addr_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

MappedFile::~MappedFile() { unmap(addr_, size_); }

void* MappedFile::release() {
  size_ = 0;
  return std::exchange(addr_, nullptr);
}

void MappedFile::unmap(void* addr, size_t size) noexcept {
  if (addr != nullptr) ::munmap(addr, size);
}

}  // namespace luminal::io
