// ZIP reader: end of central directory (plain and ZIP64), central directory, local headers.
// Layout reference: PKWARE APPNOTE.TXT sections 4.3.7 (local header), 4.3.12 (central directory),
// 4.3.14-16 (ZIP64 end records), 4.5.3 (ZIP64 extra field). All fields are little-endian.
#include "io/zip_reader.h"
#include "io/printable.h"

#include <zlib.h>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <stdexcept>

#include <fmt/format.h>

static_assert(std::endian::native == std::endian::little, "the ZIP reader assumes little-endian");

namespace luminal::io {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEocdSig = 0x06054b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr uint64_t kEocdSize = 22, kLocatorSize = 20, kZip64EocdSize = 56;
constexpr uint64_t kCentralSize = 46, kLocalSize = 30;
/// DEFLATE cannot expand data by more than about 1032:1; a bigger claim is corrupt or hostile.
constexpr uint64_t kMaxDeflateRatio = 1032;

/// Bounds-checked little-endian reads over the mapping.
struct Bytes {
  const std::byte* base;
  uint64_t size;
  bool has(uint64_t off, uint64_t n) const { return off <= size && n <= size - off; }
  template <class T>
  T get(uint64_t off) const {
    T v;
    std::memcpy(&v, base + off, sizeof(T));
    return v;
  }
  uint16_t u16(uint64_t off) const { return get<uint16_t>(off); }
  uint32_t u32(uint64_t off) const { return get<uint32_t>(off); }
  uint64_t u64(uint64_t off) const { return get<uint64_t>(off); }
};

/// Where the central directory lives and how many entries it has.
struct DirInfo {
  uint64_t offset = 0, size = 0, count = 0;
};

/// CRC-32 of a span of any length (zlib's length argument is 32-bit on some builds).
uint32_t crc32_of(std::span<const std::byte> data) {
  uLong crc = crc32(0L, Z_NULL, 0);
  const auto* p = reinterpret_cast<const Bytef*>(data.data());
  for (uint64_t left = data.size(); left > 0;) {
    auto n = static_cast<uInt>(std::min<uint64_t>(left, 1u << 30));
    crc = crc32(crc, p, n);
    p += n;
    left -= n;
  }
  return static_cast<uint32_t>(crc);
}

}  // namespace

void ZipReader::fail(const std::string& problem) const {
  throw std::runtime_error(fmt::format("[{}] {}: {}", tag_, path_, problem));
}

ZipReader ZipReader::open(const std::string& path, const char* tag) {
  ZipReader z;
  z.path_ = path;
  z.tag_ = tag;
  z.map_ = MappedFile::open(path, tag);
  z.read_central_directory();
  return z;
}

namespace {

/// Finds the end-of-central-directory record (it ends the file, followed only by a comment).
uint64_t find_eocd(const Bytes& b, const ZipReader& z) {
  if (b.size < kEocdSize)
    z.fail(fmt::format("truncated: {} bytes is too small for a ZIP archive", b.size));
  const uint64_t lowest = b.size > kEocdSize + 0xFFFF ? b.size - kEocdSize - 0xFFFF : 0;
  for (uint64_t pos = b.size - kEocdSize + 1; pos-- > lowest;) {
    if (b.u32(pos) == kEocdSig && pos + kEocdSize + b.u16(pos + 20) == b.size) return pos;
  }
  z.fail("no end-of-central-directory record (not a ZIP archive, or truncated)");
}

/// Reads the ZIP64 end record that the locator just before the plain record points to.
DirInfo read_zip64_eocd(const Bytes& b, const ZipReader& z, uint64_t eocd) {
  if (eocd < kLocatorSize || b.u32(eocd - kLocatorSize) != kZip64LocatorSig)
    z.fail("end-of-central-directory record needs ZIP64 but has no ZIP64 locator");
  const uint64_t rec = b.u64(eocd - kLocatorSize + 8);
  if (!b.has(rec, kZip64EocdSize) || rec > eocd - kLocatorSize)
    z.fail(fmt::format("ZIP64 end record offset {} is out of bounds", rec));
  if (b.u32(rec) != kZip64EocdSig) z.fail(fmt::format("bad ZIP64 end record signature at {}", rec));
  if (b.u32(rec + 16) != 0 || b.u32(rec + 20) != 0)
    z.fail("multi-disk ZIP64 archives are not supported");
  return {b.u64(rec + 48), b.u64(rec + 40), b.u64(rec + 32)};
}

DirInfo read_eocd(const Bytes& b, const ZipReader& z) {
  const uint64_t eocd = find_eocd(b, z);
  if (b.u16(eocd + 4) != 0 || b.u16(eocd + 6) != 0)
    z.fail("multi-disk ZIP archives are not supported");
  DirInfo d{b.u32(eocd + 16), b.u32(eocd + 12), b.u16(eocd + 10)};
  const bool zip64 = d.offset == 0xFFFFFFFF || d.size == 0xFFFFFFFF || d.count == 0xFFFF ||
                     (eocd >= kLocatorSize && b.u32(eocd - kLocatorSize) == kZip64LocatorSig);
  if (zip64) d = read_zip64_eocd(b, z, eocd);
  if (!b.has(d.offset, d.size) || d.offset + d.size > eocd)
    z.fail(fmt::format("central directory [{}, +{}) is out of bounds (file is {} bytes)", d.offset,
                       d.size, b.size));
  if (d.count > d.size / kCentralSize)
    z.fail(fmt::format("central directory claims {} entries in {} bytes", d.count, d.size));
  return d;
}

/// Applies the ZIP64 extended-information extra field (id 1) to fields saturated at 0xFFFF...
void apply_zip64_extra(const Bytes& b, const ZipReader& z, uint64_t extra, uint64_t extra_len,
                       const std::string& name, uint64_t& size, uint64_t& csize, uint64_t& offset) {
  for (uint64_t p = extra; p + 4 <= extra + extra_len;) {
    const uint16_t id = b.u16(p), len = b.u16(p + 2);
    if (p + 4 + len > extra + extra_len)
      z.fail(fmt::format("entry '{}': extra field overruns", name));
    if (id == 1) {
      uint64_t q = p + 4, end = q + len;
      for (uint64_t* field : {&size, &csize, &offset}) {
        if (*field != 0xFFFFFFFF) continue;
        if (q + 8 > end) z.fail(fmt::format("entry '{}': ZIP64 extra field too short", name));
        *field = b.u64(q);
        q += 8;
      }
      return;
    }
    p += 4 + len;
  }
  if (size == 0xFFFFFFFF || csize == 0xFFFFFFFF || offset == 0xFFFFFFFF)
    z.fail(fmt::format("entry '{}': sizes need ZIP64 but it has no ZIP64 extra field", name));
}

}  // namespace

void ZipReader::read_central_directory() {
  const Bytes b{map_.data(), map_.size()};
  const DirInfo dir = read_eocd(b, *this);
  uint64_t p = dir.offset;
  const uint64_t end = dir.offset + dir.size;
  for (uint64_t i = 0; i < dir.count; ++i) {
    if (p + kCentralSize > end || b.u32(p) != kCentralSig)
      fail(fmt::format("bad central directory: entry {} at offset {} has no valid header", i, p));
    const uint16_t flags = b.u16(p + 8), method = b.u16(p + 10);
    const uint64_t name_len = b.u16(p + 28), extra_len = b.u16(p + 30), comment_len = b.u16(p + 32);
    if (p + kCentralSize + name_len + extra_len + comment_len > end)
      fail(fmt::format("bad central directory: entry {} overruns it", i));
    ZipEntry e;
    e.name.assign(reinterpret_cast<const char*>(b.base + p + kCentralSize), name_len);
    const std::string shown = printable(e.name);
    e.method = method;
    e.crc32 = b.u32(p + 16);
    e.compressed_size = b.u32(p + 20);
    e.size = b.u32(p + 24);
    uint64_t local = b.u32(p + 42);
    apply_zip64_extra(b, *this, p + kCentralSize + name_len, extra_len, shown, e.size,
                      e.compressed_size, local);
    if (flags & 1) fail(fmt::format("entry '{}' is encrypted", shown));
    if (method != 0 && method != 8)
      fail(
          fmt::format("entry '{}': unsupported compression method {} (only STORED 0 and "
                      "DEFLATED 8)",
                      shown, method));
    if (method == 0 && e.size != e.compressed_size)
      fail(fmt::format("entry '{}': STORED but sizes differ ({} vs {})", shown, e.size,
                       e.compressed_size));
    if (!b.has(local, kLocalSize) || local >= dir.offset || b.u32(local) != kLocalSig)
      fail(fmt::format("entry '{}': no local header at offset {}", shown, local));
    const uint64_t lname = b.u16(local + 26), lextra = b.u16(local + 28);
    e.data_offset = local + kLocalSize + lname + lextra;
    if (lname != name_len || !b.has(local + kLocalSize, lname) ||
        std::memcmp(b.base + local + kLocalSize, e.name.data(), lname) != 0)
      fail(fmt::format("entry '{}': local header names a different file", shown));
    if (!b.has(e.data_offset, e.compressed_size) || e.data_offset + e.compressed_size > dir.offset)
      fail(fmt::format("entry '{}': data [{}, +{}) is out of bounds (central directory at {})",
                       shown, e.data_offset, e.compressed_size, dir.offset));
    if (!index_.emplace(e.name, entries_.size()).second)
      fail(fmt::format("duplicate entry '{}'", shown));
    entries_.push_back(std::move(e));
    p += kCentralSize + name_len + extra_len + comment_len;
  }
}

const ZipEntry* ZipReader::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

namespace {

/// Inflates raw DEFLATE data into exactly `size` bytes; false on corrupt data or a size mismatch.
bool inflate_exact(std::span<const std::byte> in, std::vector<std::byte>& out) {
  z_stream s{};
  if (inflateInit2(&s, -MAX_WBITS) != Z_OK) return false;
  s.next_in = reinterpret_cast<Bytef*>(const_cast<std::byte*>(in.data()));
  s.next_out = reinterpret_cast<Bytef*>(out.data());
  uint64_t in_left = in.size(), out_left = out.size();
  int rc = Z_OK;
  while (rc == Z_OK) {
    // zlib counts in 32-bit chunks; refill both sides as they drain.
    if (s.avail_in == 0 && in_left > 0) {
      s.avail_in = static_cast<uInt>(std::min<uint64_t>(in_left, 1u << 30));
      in_left -= s.avail_in;
    }
    if (s.avail_out == 0 && out_left > 0) {
      s.avail_out = static_cast<uInt>(std::min<uint64_t>(out_left, 1u << 30));
      out_left -= s.avail_out;
    }
    rc = inflate(&s, Z_NO_FLUSH);
    if (rc == Z_BUF_ERROR && (s.avail_in > 0 || in_left > 0) && (s.avail_out > 0 || out_left > 0))
      rc = Z_OK;  // transient: zlib wants the next chunk
  }
  const bool ok = rc == Z_STREAM_END && s.avail_out == 0 && out_left == 0;
  inflateEnd(&s);
  return ok;
}

}  // namespace

ZipBytes ZipReader::read(const ZipEntry& e) const {
  const std::span<const std::byte> raw(map_.data() + e.data_offset, e.compressed_size);
  ZipBytes out;
  if (e.method == 0) {
    out.data = raw;
  } else {
    if (e.size > e.compressed_size * kMaxDeflateRatio + 1024)
      fail(fmt::format("entry '{}': claims {} bytes from {} compressed (corrupt sizes)",
                       printable(e.name), e.size, e.compressed_size));
    auto buf = std::make_shared<std::vector<std::byte>>(e.size);
    if (!inflate_exact(raw, *buf))
      fail(fmt::format("entry '{}': corrupt DEFLATE data or size mismatch (expected {} bytes)",
                       printable(e.name), e.size));
    out.data = std::span<const std::byte>(buf->data(), buf->size());
    out.owned = std::move(buf);
  }
  const uint32_t crc = crc32_of(out.data);
  if (crc != e.crc32)
    fail(fmt::format("entry '{}': CRC-32 mismatch (stored {:08x}, computed {:08x})",
                     printable(e.name), e.crc32, crc));
  return out;
}

ZipBytes ZipReader::read(std::string_view name) const {
  const ZipEntry* e = find(name);
  if (!e) fail(fmt::format("no entry '{}'", printable(name)));
  return read(*e);
}

}  // namespace luminal::io
