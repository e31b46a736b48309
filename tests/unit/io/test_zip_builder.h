// Builds small ZIP archives byte by byte for the ZIP and .pt2 reader tests: STORED or DEFLATED
// (as stored DEFLATE blocks, so no zlib is needed here) entries, optional ZIP64 records.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace luminal::test {

/// CRC-32 (IEEE, as in ZIP), written out here so the tests do not share the reader's zlib call.
inline uint32_t crc32_ieee(const std::string& s) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

/// Little-endian bytes of an integer.
template <class T>
std::string le(T v) {
  std::string s(sizeof(T), '\0');
  for (size_t i = 0; i < sizeof(T); ++i) s[i] = static_cast<char>((uint64_t(v) >> (8 * i)) & 0xFF);
  return s;
}

/// `data` as a raw DEFLATE stream of stored blocks (BTYPE 00), at most 65535 bytes each.
inline std::string deflate_stored(const std::string& data) {
  std::string out;
  size_t pos = 0;
  do {
    const size_t n = std::min<size_t>(data.size() - pos, 65535);
    const bool last = pos + n == data.size();
    out += static_cast<char>(last ? 1 : 0);
    out += le<uint16_t>(static_cast<uint16_t>(n)) + le<uint16_t>(static_cast<uint16_t>(~n));
    out += data.substr(pos, n);
    pos += n;
  } while (pos < data.size());
  return out;
}

/// One file to put in a test archive.
struct ZipFile {
  std::string name;
  std::string data;
  bool deflate = false;
};

/// A ZIP archive of `files`; with zip64 every size/offset goes through ZIP64 records.
inline std::string build_zip(const std::vector<ZipFile>& files, bool zip64 = false) {
  std::string out, central;
  const uint32_t sat32 = 0xFFFFFFFFu;
  for (const ZipFile& f : files) {
    const std::string body = f.deflate ? deflate_stored(f.data) : f.data;
    const uint16_t method = f.deflate ? 8 : 0;
    const uint32_t crc = crc32_ieee(f.data);
    const uint64_t offset = out.size();
    out += le<uint32_t>(0x04034b50) + le<uint16_t>(zip64 ? 45 : 20) + le<uint16_t>(0) +
           le<uint16_t>(method) + le<uint32_t>(0) + le<uint32_t>(crc) +
           le<uint32_t>(uint32_t(body.size())) + le<uint32_t>(uint32_t(f.data.size())) +
           le<uint16_t>(uint16_t(f.name.size())) + le<uint16_t>(0) + f.name + body;
    const std::string extra = zip64 ? le<uint16_t>(1) + le<uint16_t>(24) +
                                          le<uint64_t>(f.data.size()) + le<uint64_t>(body.size()) +
                                          le<uint64_t>(offset)
                                    : std::string();
    central += le<uint32_t>(0x02014b50) + le<uint16_t>(45) + le<uint16_t>(zip64 ? 45 : 20) +
               le<uint16_t>(0) + le<uint16_t>(method) + le<uint32_t>(0) + le<uint32_t>(crc) +
               le<uint32_t>(zip64 ? sat32 : uint32_t(body.size())) +
               le<uint32_t>(zip64 ? sat32 : uint32_t(f.data.size())) +
               le<uint16_t>(uint16_t(f.name.size())) + le<uint16_t>(uint16_t(extra.size())) +
               le<uint16_t>(0) + le<uint16_t>(0) + le<uint16_t>(0) + le<uint32_t>(0) +
               le<uint32_t>(zip64 ? sat32 : uint32_t(offset)) + f.name + extra;
  }
  const uint64_t cd_offset = out.size();
  out += central;
  if (zip64) {
    const uint64_t rec = out.size();
    out += le<uint32_t>(0x06064b50) + le<uint64_t>(44) + le<uint16_t>(45) + le<uint16_t>(45) +
           le<uint32_t>(0) + le<uint32_t>(0) + le<uint64_t>(files.size()) +
           le<uint64_t>(files.size()) + le<uint64_t>(central.size()) + le<uint64_t>(cd_offset);
    out += le<uint32_t>(0x07064b50) + le<uint32_t>(0) + le<uint64_t>(rec) + le<uint32_t>(1);
  }
  const uint16_t count = zip64 ? 0xFFFF : uint16_t(files.size());
  out += le<uint32_t>(0x06054b50) + le<uint16_t>(0) + le<uint16_t>(0) + le<uint16_t>(count) +
         le<uint16_t>(count) + le<uint32_t>(zip64 ? sat32 : uint32_t(central.size())) +
         le<uint32_t>(zip64 ? sat32 : uint32_t(cd_offset)) + le<uint16_t>(0);
  return out;
}

}  // namespace luminal::test
