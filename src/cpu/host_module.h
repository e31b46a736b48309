// Native code for generated kernels: one C++ translation unit compiled into a shared library by
// the system compiler and loaded with dlopen; cached in memory and on disk by a stable hash.
#pragma once

#include <memory>
#include <string>

namespace luminal::cpu {

/// A loaded shared library built from one source. Thread-safe to share; unloaded when the last
/// holder drops it.
class HostModule {
 public:
  /// The module for `source` built with `compiler` and `flags`: from this process's memory, from
  /// the disk cache ($LUMINAL_CACHE_DIR/cpu/v1, see io::cache_root) or compiled now. Throws
  /// "[cpu] ..." with the compiler's messages when the build fails.
  static std::shared_ptr<HostModule> get(const std::string& source, const std::string& compiler,
                                         const std::string& flags);
  ~HostModule();
  HostModule(const HostModule&) = delete;
  HostModule& operator=(const HostModule&) = delete;

  /// The address of extern "C" symbol `name`; throws when missing.
  void* symbol(const std::string& name) const;
  /// Compiles done by get() in this process (tests check the caches with it).
  static size_t compiles();

 private:
  explicit HostModule(void* handle) : handle_(handle) {}
  void* handle_ = nullptr;
};

}  // namespace luminal::cpu
