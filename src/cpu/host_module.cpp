// The host JIT: writes the source next to its library in the cache folder, runs the compiler
// once per distinct (source, compiler, flags, CPU) and renames the result into place, so a
// concurrent reader never loads half a file. The source is kept beside the library and compared
// on a hit, so a hash collision recompiles instead of loading the wrong code.
#include "cpu/host_module.h"

#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

#include "compiler/search/candidate.h"
#include "io/environment.h"

namespace luminal::cpu {
namespace fs = std::filesystem;

namespace {

std::atomic<size_t> g_compiles{0};

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) return {};
  std::ostringstream s;
  s << f.rdbuf();
  return s.str();
}

// The CPU's model line: libraries built with -march=native are valid only on such a CPU.
const std::string& cpu_model() {
  static const std::string model = [] {
    std::ifstream f("/proc/cpuinfo");
    std::string line;
    while (std::getline(f, line))
      if (line.rfind("model name", 0) == 0 || line.rfind("flags", 0) == 0) return line;
    return std::string("unknown cpu");
  }();
  return model;
}

// Runs `cmd`, returning its exit status and what it printed (stdout and stderr).
int run(const std::string& cmd, std::string& output) {
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (p == nullptr) return -1;
  std::array<char, 4096> buf{};
  while (size_t n = std::fread(buf.data(), 1, buf.size(), p)) output.append(buf.data(), n);
  return pclose(p);
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

// A folder for this build: the cache, else a fresh temporary one (removed after loading).
fs::path build_dir(bool& temporary) {
  const fs::path root = io::cache_root();
  std::error_code ec;
  if (!root.empty()) {
    const fs::path d = root / "cpu" / "v1";
    fs::create_directories(d, ec);
    if (!ec) return d;
  }
  temporary = true;
  std::string tmpl = (fs::temp_directory_path() / "luminal-cpu-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("[cpu] cannot create a temporary folder");
  return tmpl;
}

}  // namespace

std::shared_ptr<HostModule> HostModule::get(const std::string& source, const std::string& compiler,
                                            const std::string& flags) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<HostModule>> loaded;
  const std::string key = fmt::format("{}\n{}\n{}\n{}", compiler, flags, cpu_model(), source);
  const std::lock_guard<std::mutex> lock(mu);
  if (auto m = loaded[key].lock()) return m;

  bool temporary = false;
  const fs::path dir = build_dir(temporary);
  const std::string stem = fmt::format("{:016x}", compiler::search::fnv1a64(key));
  const fs::path src = dir / (stem + ".cpp"), lib = dir / (stem + ".so"), keyf = dir / (stem + ".key");
  if (temporary || read_file(keyf) != key || !fs::exists(lib)) {
    const std::string tag = fmt::format(".{}.tmp", getpid());
    { std::ofstream(src.string() + tag, std::ios::binary) << source; }
    fs::rename(src.string() + tag, src);
    std::string out;
    // libmvec (glibc): the vector math functions host_common.h declares for `omp simd` loops.
    const std::string cmd = fmt::format("{} {} -std=c++17 -fPIC -shared -o {} {} -lmvec", compiler, flags,
                                        quote(lib.string() + tag), quote(src.string()));
    ++g_compiles;
    if (run(cmd, out) != 0) {
      throw std::runtime_error(fmt::format("[cpu] compiling generated kernels failed ({}):\n{}\nsource: {}",
                                           cmd, out.substr(0, 4000), src.string()));
    }
    fs::rename(lib.string() + tag, lib);
    { std::ofstream(keyf.string() + tag, std::ios::binary) << key; }
    fs::rename(keyf.string() + tag, keyf);
  }
  void* h = dlopen(lib.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (temporary) fs::remove_all(dir);
  if (h == nullptr) throw std::runtime_error(fmt::format("[cpu] dlopen {}: {}", lib.string(), dlerror()));
  std::shared_ptr<HostModule> m(new HostModule(h));
  loaded[key] = m;
  return m;
}

HostModule::~HostModule() {
  if (handle_ != nullptr) dlclose(handle_);
}

void* HostModule::symbol(const std::string& name) const {
  void* s = dlsym(handle_, name.c_str());
  if (s == nullptr) throw std::logic_error(fmt::format("[cpu] generated module has no symbol {}", name));
  return s;
}

size_t HostModule::compiles() { return g_compiles.load(); }

}  // namespace luminal::cpu
