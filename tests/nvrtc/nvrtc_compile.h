// Test-only NVRTC helper: compiles a generated kernel for sm_90 with the embedded device headers.
// (The runtime has its own production wrapper; tests do not depend on it.)
#pragma once

#include <nvrtc.h>

#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "cuda/codegen/embedded.h"

namespace luminal::test {

/// Source with line numbers, for failure messages.
inline std::string numbered(const std::string& src) {
  std::string out;
  int line = 1;
  size_t start = 0;
  while (start <= src.size()) {
    size_t end = src.find('\n', start);
    if (end == std::string::npos) end = src.size();
    out += fmt::format("{:4} | {}\n", line++, src.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

/// Outcome of one NVRTC compile.
struct NvrtcCompile {
  nvrtcResult result = NVRTC_SUCCESS;
  bool ok = false;  // compiled and produced a non-empty CUBIN
  std::string log;
};

/// Compiles `source` to an sm_90 CUBIN with the embedded device headers and extra options.
inline NvrtcCompile nvrtc_compile_sm90(const std::string& source, const std::string& name,
                                       const std::vector<const char*>& extra_opts = {"-std=c++17"},
                                       const char* arch = "--gpu-architecture=sm_90") {
  std::vector<std::string> names, bodies;
  for (const auto& [n, body] : embedded_headers()) {
    names.push_back(n);
    bodies.emplace_back(body);
  }
  std::vector<const char*> name_ptrs, body_ptrs;
  for (size_t i = 0; i < names.size(); ++i) {
    name_ptrs.push_back(names[i].c_str());
    body_ptrs.push_back(bodies[i].c_str());
  }
  NvrtcCompile out;
  nvrtcProgram prog = nullptr;
  out.result = nvrtcCreateProgram(&prog, source.c_str(), (name + ".cu").c_str(),
                                  static_cast<int>(names.size()), body_ptrs.data(), name_ptrs.data());
  if (out.result != NVRTC_SUCCESS) {
    out.log = std::string("nvrtcCreateProgram: ") + nvrtcGetErrorString(out.result);
    return out;
  }
  std::vector<const char*> opts{arch};
  opts.insert(opts.end(), extra_opts.begin(), extra_opts.end());
  out.result = nvrtcCompileProgram(prog, static_cast<int>(opts.size()), opts.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  out.log.assign(log_size, '\0');
  if (log_size > 0) nvrtcGetProgramLog(prog, out.log.data());
  size_t cubin = 0;
  if (out.result == NVRTC_SUCCESS) nvrtcGetCUBINSize(prog, &cubin);
  nvrtcDestroyProgram(&prog);
  out.ok = out.result == NVRTC_SUCCESS && cubin > 0;
  return out;
}

/// Compiles `source` to an sm_90 CUBIN (no fast math); on failure the result carries the
/// numbered source and the NVRTC log.
inline ::testing::AssertionResult nvrtc_compiles(const std::string& source, const std::string& name) {
  const NvrtcCompile c = nvrtc_compile_sm90(source, name);
  if (!c.ok) {
    return ::testing::AssertionFailure() << "NVRTC failed for " << name << " (" << nvrtcGetErrorString(c.result)
                                         << ")\n--- source ---\n" << numbered(source) << "--- log ---\n" << c.log;
  }
  return ::testing::AssertionSuccess();
}

/// Compiles a generated kernel (C++20, ptxas -v; sm_90, or sm_90a when `arch_specific`) and checks
/// that ptxas used no stack frame and spilled no registers ("N bytes stack frame, N bytes spill
/// stores"); failures carry the log and the numbered source.
inline ::testing::AssertionResult compiles_without_spills(const std::string& source, const std::string& entry,
                                                          bool arch_specific = false) {
  const NvrtcCompile r =
      nvrtc_compile_sm90(source, entry, {"-std=c++20", "-default-device", "--ptxas-options=-v"},
                         arch_specific ? "--gpu-architecture=sm_90a" : "--gpu-architecture=sm_90");
  if (!r.ok)
    return ::testing::AssertionFailure() << "NVRTC failed for " << entry << "\n--- log ---\n" << r.log
                                         << "\n--- source ---\n" << numbered(source);
  std::smatch m;
  if (!std::regex_search(r.log, m, std::regex(R"((\d+) bytes stack frame, (\d+) bytes spill stores)")))
    return ::testing::AssertionFailure() << "no ptxas -v resource line\n" << r.log;
  if (m[1].str() != "0" || m[2].str() != "0")
    return ::testing::AssertionFailure() << m[1].str() << " bytes stack frame, " << m[2].str()
                                         << " bytes spill stores\n" << r.log << numbered(source);
  return ::testing::AssertionSuccess();
}

}  // namespace luminal::test
