// NVRTC compile checks of the generated DLRM megakernel for sm_90 (no GPU needed): it compiles, and
// ptxas keeps every activation in registers (no local-memory spills).
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <map>
#include <regex>
#include <string>
#include <string_view>
#include <vector>

#include "custom/dlrm_mega/op.h"
#include "custom/dlrm_mega/plan.h"

namespace luminal {
const std::map<std::string, std::string_view>& embedded_headers();
}

namespace luminal::custom {
namespace {

struct NvrtcResult {
  bool ok = false;
  std::string log;
};

// Compiles a kernel source to sm_90 CUBIN with the embedded headers; the log includes ptxas -v.
NvrtcResult compile_sm90(const CustomKernel& k) {
  std::vector<std::string> names, bodies;
  for (const auto& [name, body] : embedded_headers()) {
    names.push_back(name);
    bodies.emplace_back(body);
  }
  std::vector<const char*> name_ptrs, body_ptrs;
  for (size_t i = 0; i < names.size(); ++i) {
    name_ptrs.push_back(names[i].c_str());
    body_ptrs.push_back(bodies[i].c_str());
  }
  nvrtcProgram prog = nullptr;
  NvrtcResult r;
  if (nvrtcCreateProgram(&prog, k.source.c_str(), (k.entry + ".cu").c_str(), static_cast<int>(names.size()),
                         body_ptrs.data(), name_ptrs.data()) != NVRTC_SUCCESS) {
    r.log = "nvrtcCreateProgram failed";
    return r;
  }
  const char* opts[] = {"--gpu-architecture=sm_90", "-std=c++20", "-default-device", "--ptxas-options=-v"};
  const nvrtcResult res = nvrtcCompileProgram(prog, 4, opts);
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  r.log.resize(log_size);
  if (log_size > 0) nvrtcGetProgramLog(prog, r.log.data());
  size_t cubin_size = 0;
  r.ok = res == NVRTC_SUCCESS && nvrtcGetCUBINSize(prog, &cubin_size) == NVRTC_SUCCESS && cubin_size > 0;
  nvrtcDestroyProgram(&prog);
  return r;
}

nn::DlrmConfig config(std::vector<int64_t> bot, std::vector<int64_t> emb, std::vector<int64_t> top, int64_t batch,
                      int64_t bag, DType idx = DType::I32) {
  nn::DlrmConfig c;
  c.ln_bot = std::move(bot);
  c.ln_emb = std::move(emb);
  c.ln_top = std::move(top);
  c.batch = batch;
  c.bag = bag;
  c.index_dtype = idx;
  return c;
}

void expect_compiles(const nn::DlrmConfig& c) {
  ASSERT_EQ(why_unsupported(c), "");
  const CustomKernel k = emit_dlrm_mega(c);
  const NvrtcResult r = compile_sm90(k);
  ASSERT_TRUE(r.ok) << "NVRTC failed for " << k.entry << "\n--- log ---\n" << r.log << "\n--- source ---\n"
                    << k.source;
  // ptxas -v: "N bytes stack frame, N bytes spill stores, N bytes spill loads".
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.log, m, std::regex(R"((\d+) bytes stack frame, (\d+) bytes spill stores)")))
      << r.log;
  EXPECT_EQ(m[1].str(), "0") << "local memory used (an activation left registers)\n" << r.log << k.source;
  EXPECT_EQ(m[2].str(), "0") << "register spills\n" << r.log << k.source;
  EXPECT_NE(k.source.find("extern \"C\" __global__"), std::string::npos);
}

TEST(DlrmMegaNvrtc, SeedShape) {
  const nn::DlrmConfig c = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 2048, 1);
  expect_compiles(c);
  const CustomKernel k = emit_dlrm_mega(c);
  EXPECT_EQ(k.block[0] * k.grid[0] % 2048, 0u);  // grid covers the batch exactly here
  EXPECT_GE(static_cast<long long>(k.block[0]) * k.grid[0], 2048);
}

TEST(DlrmMegaNvrtc, EightTablesBag3) {
  expect_compiles(config({13, 16, 8}, {10, 20, 30, 40, 50, 60, 70, 80}, {44, 16, 1}, 2048, 3));
}

TEST(DlrmMegaNvrtc, DeepBottomTwoTopHidden) {
  expect_compiles(config({13, 64, 32, 16}, {100, 50, 25}, {22, 64, 32, 1}, 2048, 2));
}

TEST(DlrmMegaNvrtc, I64IndicesHugeTableOddBatch) {
  // A 40M-row table needs 64-bit row offsets; batch 1000 leaves a partial last block.
  expect_compiles(config({13, 8, 4}, {40'000'000, 20, 30}, {10, 8, 1}, 1000, 1, DType::I64));
}

TEST(DlrmMegaNvrtc, WeightsBeyondSharedMemoryReadGlobal) {
  const nn::DlrmConfig c = config({64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 64, 16}, {100, 100}, {19, 64, 1}, 512, 1);
  const MegaPlanResult p = plan_dlrm_mega(c);
  ASSERT_TRUE(p.plan) << p.why;
  EXPECT_GT(p.plan->staged, 0);
  EXPECT_LT(p.plan->staged, static_cast<int>(p.plan->layers.size()));
  expect_compiles(c);
}

TEST(DlrmMegaNvrtc, TopWithoutHiddenLayerBatchOne) {
  expect_compiles(config({13, 8, 4}, {10, 20, 30}, {10, 1}, 1, 1));
}

TEST(DlrmMegaNvrtc, OneLanePerSampleAtLargeBatch) {
  const nn::DlrmConfig c = config({13, 8, 4}, {10, 20, 30}, {10, 8, 1}, 65536, 1);
  ASSERT_EQ(plan_dlrm_mega(c).plan->lanes, 1);
  expect_compiles(c);
}

}  // namespace
}  // namespace luminal::custom
