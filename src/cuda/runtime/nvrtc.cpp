// NVRTC compilation with the embedded device headers.
#include "cuda/runtime/nvrtc.h"
#include "cuda/codegen/embedded.h"
#include "cuda/runtime/driver.h"
#include "io/environment.h"

#include <fmt/format.h>
#include <nvrtc.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <stdexcept>
#include <string_view>

#ifndef LUMINAL_CUDA_INCLUDE
#define LUMINAL_CUDA_INCLUDE ""
#endif

namespace luminal::cuda {
namespace {

void check_nvrtc(nvrtcResult r, const char* call, const std::string& name) {
  if (r != NVRTC_SUCCESS) [[unlikely]]
    throw std::runtime_error(
        fmt::format("[nvrtc] {} failed for {}: {}", call, name, nvrtcGetErrorString(r)));
}

}  // namespace
}  // namespace luminal::cuda

/// Checks an NVRTC call, quoting it and naming the kernel in the error.
#define CHECK_NVRTC(call, name) ::luminal::cuda::check_nvrtc((call), #call, (name))

namespace luminal::cuda {
namespace {

// Null-terminated copies of the embedded headers, in the form nvrtcCreateProgram takes.
struct HeaderTable {
  std::vector<std::string> names, sources;
  std::vector<const char*> name_ptrs, source_ptrs;
  HeaderTable() {
    for (const auto& [name, src] : embedded_headers()) {
      names.push_back(name);
      sources.emplace_back(src);
    }
    for (size_t i = 0; i < names.size(); ++i) {
      name_ptrs.push_back(names[i].c_str());
      source_ptrs.push_back(sources[i].c_str());
    }
  }
};

const HeaderTable& header_table() {
  static const HeaderTable t;
  return t;
}

// Toolkit include directories that exist here: CudaEnvironment::include_dirs, the build's toolkit
// and the usual install path, each with its cccl/ subfolder.
std::vector<std::string> include_dirs() {
  std::vector<std::string> candidates;
  auto split = [&](std::string_view list, char sep) {
    while (!list.empty()) {
      size_t p = list.find(sep);
      std::string_view item = list.substr(0, p);
      if (!item.empty()) candidates.emplace_back(item);
      list = p == std::string_view::npos ? std::string_view{} : list.substr(p + 1);
    }
  };
  for (const std::string& dir : environment().include_dirs) candidates.push_back(dir);
  split(LUMINAL_CUDA_INCLUDE, '|');  // CMakeLists.txt joins the toolkit's include dirs with '|'

  candidates.emplace_back("/usr/local/cuda/include");
  std::vector<std::string> out;
  std::error_code ec;
  for (const std::string& dir : candidates) {
    for (const std::string& d : {dir, dir + "/cccl"}) {
      if (std::filesystem::is_directory(d, ec) && std::find(out.begin(), out.end(), d) == out.end())
        out.push_back(d);
    }
  }
  return out;
}

std::string program_log(nvrtcProgram prog) {
  size_t size = 0;
  if (nvrtcGetProgramLogSize(prog, &size) != NVRTC_SUCCESS || size == 0) return "";
  std::string log(size, '\0');
  if (nvrtcGetProgramLog(prog, log.data()) != NVRTC_SUCCESS) return "";
  while (!log.empty() && (log.back() == '\0' || log.back() == '\n')) log.pop_back();
  return log;
}

struct ProgramDeleter {
  void operator()(nvrtcProgram p) const { nvrtcDestroyProgram(&p); }
};
using Program = std::unique_ptr<std::remove_pointer_t<nvrtcProgram>, ProgramDeleter>;

}  // namespace

int debug_level() { return io::debug_level(); }

std::string nvrtc_version() {
  int major = 0, minor = 0;
  CHECK_NVRTC(nvrtcVersion(&major, &minor), "the version query");
  return fmt::format("{}.{}", major, minor);
}

std::string nvrtc_target(int cc_major, int cc_minor) {
  int n = 0;
  CHECK_NVRTC(nvrtcGetNumSupportedArchs(&n), "the architecture query");
  std::vector<int> archs(static_cast<size_t>(n));
  CHECK_NVRTC(nvrtcGetSupportedArchs(archs.data()), "the architecture query");
  const int want = cc_major * 10 + cc_minor;
  // 9.0 compiles as sm_90a: the image is for this exact device anyway, and the arch-specific
  // features (wgmma: the Hopper CrossGemm) are only there.
  if (std::find(archs.begin(), archs.end(), want) != archs.end())
    return fmt::format("sm_{}{}", want, want == 90 ? "a" : "");
  int best = -1;
  for (int a : archs) {
    if (a <= want) best = std::max(best, a);
  }
  if (best < 0)
    throw std::runtime_error(fmt::format("[nvrtc] NVRTC {} cannot target sm_{} or anything older",
                                         nvrtc_version(), want));
  return fmt::format("compute_{}", best);
}

std::vector<std::string> nvrtc_options(const std::string& target) {
  std::vector<std::string> opts = {"--gpu-architecture=" + target, "-std=c++20", "-default-device"};
  for (const std::string& dir : include_dirs()) opts.push_back("-I" + dir);
  return opts;
}

DeviceImage nvrtc_compile(const std::string& source, const std::string& name,
                          const std::vector<std::string>& options) {
  const HeaderTable& headers = header_table();
  if (debug_level() >= 2)
    std::fprintf(stderr, "[nvrtc] compiling %s:\n%s\n", name.c_str(), source.c_str());
  nvrtcProgram raw = nullptr;
  CHECK_NVRTC(nvrtcCreateProgram(&raw, source.c_str(), (name + ".cu").c_str(),
                                 static_cast<int>(headers.names.size()), headers.source_ptrs.data(),
                                 headers.name_ptrs.data()),
              name);
  Program prog(raw);
  std::vector<const char*> opt_ptrs;
  for (const std::string& o : options) opt_ptrs.push_back(o.c_str());
  nvrtcResult r =
      nvrtcCompileProgram(prog.get(), static_cast<int>(opt_ptrs.size()), opt_ptrs.data());
  if (r != NVRTC_SUCCESS) {
    std::string msg = fmt::format("[nvrtc] compiling {} failed: {}\n{}", name,
                                  nvrtcGetErrorString(r), program_log(prog.get()));
    if (debug_level() >= 1) msg += fmt::format("\n---- source of {} ----\n{}", name, source);
    throw std::runtime_error(msg);
  }
  DeviceImage img;
  img.is_ptx = std::any_of(options.begin(), options.end(), [](const std::string& o) {
    return o.starts_with("--gpu-architecture=compute_");
  });
  size_t size = 0;
  if (img.is_ptx) {
    CHECK_NVRTC(nvrtcGetPTXSize(prog.get(), &size), name);
    img.bytes.resize(size);
    CHECK_NVRTC(nvrtcGetPTX(prog.get(), img.bytes.data()), name);
  } else {
    CHECK_NVRTC(nvrtcGetCUBINSize(prog.get(), &size), name);
    img.bytes.resize(size);
    CHECK_NVRTC(nvrtcGetCUBIN(prog.get(), img.bytes.data()), name);
  }
  if (img.bytes.empty())
    throw std::runtime_error(fmt::format("[nvrtc] compiling {} produced an empty image", name));
  return img;
}

}  // namespace luminal::cuda
