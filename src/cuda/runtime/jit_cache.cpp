// The JIT cache: memory map, then disk files, then NVRTC.
#include "cuda/runtime/jit_cache.h"
#include "cuda/codegen/embedded.h"
#include "cuda/runtime/driver.h"
#include "io/environment.h"

#include <fmt/format.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <map>

namespace luminal::cuda {
namespace {

constexpr std::string_view kMagic = "LUMJIT01";

// Everything the embedded headers contribute to a compile, hashed once.
uint64_t embedded_headers_hash() {
  static const uint64_t h = [] {
    uint64_t v = fnv1a64("embedded");
    for (const auto& [name, src] : embedded_headers()) {
      v = fnv1a64(name, v);
      v = fnv1a64(std::string_view("\0", 1), v);
      v = fnv1a64(src, v);
    }
    return v;
  }();
  return h;
}

std::filesystem::path env_dir() {
  if (!environment().jit_disk_cache) return {};
  const std::filesystem::path base = io::cache_root();
  return base.empty() ? base : base / "jit" / "v1";
}

void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

bool get_u64(std::string_view& s, uint64_t& v) {
  if (s.size() < 8) return false;
  v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t{static_cast<unsigned char>(s[i])} << (8 * i);
  s.remove_prefix(8);
  return true;
}

}  // namespace

uint64_t fnv1a64(std::string_view data, uint64_t h) {
  for (char c : data) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

JitCache::JitCache(std::filesystem::path dir) : dir_(std::move(dir)) {
  if (dir_.empty()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec || !std::filesystem::is_directory(dir_, ec)) {
    if (debug_level() >= 1)
      std::fprintf(stderr, "[jit] disk cache off: cannot create %s\n", dir_.string().c_str());
    dir_.clear();
  }
}

JitCache& JitCache::global() {
  static JitCache cache(env_dir());
  return cache;
}

std::string JitCache::key_of(const std::string& source, const std::string& name,
                             const std::string& target) {
  std::string key =
      fmt::format("luminal-jit v1\ntarget {}\nnvrtc {}\nheaders {:016x}\nname {}\noptions", target,
                  nvrtc_version(), embedded_headers_hash(), name);
  for (const std::string& o : nvrtc_options(target)) key += " " + o;
  key += "\nsource\n";
  key += source;
  return key;
}

std::filesystem::path JitCache::file_for(const std::string& key) const {
  if (dir_.empty()) return {};
  return dir_ / fmt::format("{:016x}.bin", fnv1a64(key));
}

DeviceImage JitCache::get(const std::string& source, const std::string& name,
                          const std::string& target) {
  const std::string key = key_of(source, name, target);
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = memory_.find(key);
    if (it != memory_.end()) {
      ++stats_.memory_hits;
      return it->second;
    }
  }
  DeviceImage img;
  bool from_disk = read_disk(key, img);
  if (!from_disk) {
    img = nvrtc_compile(source, name, nvrtc_options(target));
    write_disk(key, img);
  }
  std::lock_guard<std::mutex> lock(mu_);
  ++(from_disk ? stats_.disk_hits : stats_.compiles);
  memory_.emplace(key, img);
  return img;
}

JitCache::Stats JitCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

// File: magic | u64 key size | key | u64 is_ptx | u64 image size | image | u64 fnv1a64(image).
bool JitCache::read_disk(const std::string& key, DeviceImage& out) const {
  if (dir_.empty()) return false;
  std::ifstream f(file_for(key), std::ios::binary);
  if (!f) return false;
  const std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::string_view s = data;
  uint64_t key_size = 0, is_ptx = 0, size = 0, sum = 0;
  if (!s.starts_with(kMagic)) return false;
  s.remove_prefix(kMagic.size());
  if (!get_u64(s, key_size) || key_size > s.size() || s.substr(0, key_size) != key) return false;
  s.remove_prefix(key_size);
  if (!get_u64(s, is_ptx) || !get_u64(s, size) || size > s.size() || size == 0) return false;
  std::string_view image = s.substr(0, size);
  s.remove_prefix(size);
  if (!get_u64(s, sum) || !s.empty() || sum != fnv1a64(image) || is_ptx > 1) return false;
  out.bytes.assign(image);
  out.is_ptx = is_ptx == 1;
  return true;
}

void JitCache::write_disk(const std::string& key, const DeviceImage& img) const {
  if (dir_.empty()) return;
  static std::atomic<unsigned> counter{0};
  std::string data(kMagic);
  put_u64(data, key.size());
  data += key;
  put_u64(data, img.is_ptx ? 1 : 0);
  put_u64(data, img.bytes.size());
  data += img.bytes;
  put_u64(data, fnv1a64(img.bytes));
  const std::filesystem::path final_path = file_for(key);
  std::filesystem::path tmp = final_path;
  tmp += fmt::format(".tmp.{}.{}", static_cast<long>(getpid()), counter++);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    f.close();
    if (!f) {  // a full or read-only disk only costs a recompile next time
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, final_path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

}  // namespace luminal::cuda
