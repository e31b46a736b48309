// NVRTC compilation and the two-level JIT cache (needs the toolkit, not a GPU: runs anywhere).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "cuda/codegen/embedded.h"
#include "cuda/runtime/jit_cache.h"
#include "gpu/gpu_test_util.h"

namespace luminal::cuda {
// From cuda/runtime/matmul_epilogue.h, which needs the CUDA headers this target does not see.
std::string matmul_epilogue_source(DType dt);
std::string tf32_split_source();

namespace {

namespace fs = std::filesystem;

const std::string kSource =
    R"(extern "C" __global__ void twice(float* x) { x[threadIdx.x] *= 2.0f; })";

fs::path fresh_dir(const std::string& name) {
  fs::path d =
      fs::path(::testing::TempDir()) / ("luminal_jit_" + name + "_" + std::to_string(getpid()));
  fs::remove_all(d);
  return d;
}

std::string read_file(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void write_file(const fs::path& p, const std::string& data) {
  std::ofstream f(p, std::ios::binary | std::ios::trunc);
  f << data;
}

TEST(JitCache, Fnv1aMatchesPublishedVectors) {
  EXPECT_EQ(fnv1a64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(fnv1a64("a"), 0xaf63dc4c8601ec8cull);
  EXPECT_EQ(fnv1a64("foobar"), 0x85944171f73967e8ull);
}

TEST(JitCache, KeyDependsOnSourceTargetAndName) {
  const std::string k = JitCache::key_of(kSource, "twice", "sm_90");
  EXPECT_EQ(k, JitCache::key_of(kSource, "twice", "sm_90"));
  EXPECT_NE(k, JitCache::key_of(kSource + " ", "twice", "sm_90"));
  EXPECT_NE(k, JitCache::key_of(kSource, "twice", "sm_80"));
  EXPECT_NE(k.find(nvrtc_version()), std::string::npos);
}

TEST(JitCache, CompilesOnceThenHitsMemoryThenDisk) {
  const fs::path dir = fresh_dir("levels");
  JitCache c1(dir);
  ASSERT_EQ(c1.dir(), dir);
  const DeviceImage a = c1.get(kSource, "twice", "sm_90");
  EXPECT_FALSE(a.is_ptx);
  ASSERT_GE(a.bytes.size(), 4u);
  EXPECT_EQ(a.bytes.substr(0, 4), std::string("\x7f"
                                              "ELF"));  // a CUBIN is an ELF file
  EXPECT_EQ(c1.stats().compiles, 1u);
  const DeviceImage b = c1.get(kSource, "twice", "sm_90");
  EXPECT_EQ(c1.stats().memory_hits, 1u);
  EXPECT_EQ(b.bytes, a.bytes);

  JitCache c2(dir);  // a new process, in effect
  const DeviceImage c = c2.get(kSource, "twice", "sm_90");
  EXPECT_EQ(c2.stats().disk_hits, 1u);
  EXPECT_EQ(c2.stats().compiles, 0u);
  EXPECT_EQ(c.bytes, a.bytes);
  fs::remove_all(dir);
}

TEST(JitCache, CorruptFilesAreIgnoredAndRewritten) {
  const fs::path dir = fresh_dir("corrupt");
  const DeviceImage good = JitCache(dir).get(kSource, "twice", "sm_90");
  const fs::path file = JitCache(dir).file_for(JitCache::key_of(kSource, "twice", "sm_90"));
  ASSERT_TRUE(fs::exists(file));
  const std::string original = read_file(file);
  std::string flipped = original;
  flipped[flipped.size() - 20] ^= 0x5a;  // inside the image: the checksum no longer matches
  for (const std::string& bad :
       {original.substr(0, original.size() / 2), flipped, std::string("garbage"), std::string()}) {
    write_file(file, bad);
    JitCache c(dir);
    const DeviceImage img = c.get(kSource, "twice", "sm_90");
    EXPECT_EQ(c.stats().compiles, 1u);
    EXPECT_EQ(c.stats().disk_hits, 0u);
    EXPECT_EQ(img.bytes, good.bytes);
    JitCache again(dir);  // the file was rewritten whole
    again.get(kSource, "twice", "sm_90");
    EXPECT_EQ(again.stats().disk_hits, 1u);
  }
  fs::remove_all(dir);
}

TEST(JitCache, MemoryOnlyWithoutDirectory) {
  JitCache c{fs::path()};
  EXPECT_TRUE(c.dir().empty());
  c.get(kSource, "twice", "sm_90");
  c.get(kSource, "twice", "sm_90");
  EXPECT_EQ(c.stats().compiles, 1u);
  EXPECT_EQ(c.stats().memory_hits, 1u);
}

TEST(JitCache, FailedCompileNamesTheKernelAndShowsTheLog) {
  JitCache c{fs::path()};
  gpu_test::expect_error(
      [&] { c.get("extern \"C\" __global__ void bad( { }", "bad_kernel", "sm_90"); },
      {"[nvrtc]", "bad_kernel", "error"});
}

TEST(JitCache, EmbeddedHeadersAreIncludableByName) {
  if (embedded_headers().empty()) GTEST_SKIP() << "no embedded headers in this build";
  JitCache c{fs::path()};
  for (const auto& [name, text] : embedded_headers()) {
    if (!name.ends_with(".cuh")) continue;  // host headers (src/cpu/kernels/*.h) are the host compiler's
    const std::string src =
        "#include \"" + name + "\"\nextern \"C\" __global__ void probe(int* x) { x[0] = 1; }\n";
    EXPECT_NO_THROW(c.get(src, "probe", "sm_90")) << name;
  }
}

TEST(JitCache, MatmulEpilogueKernelsCompileForEveryFloatType) {
  JitCache c{fs::path()};
  for (DType dt : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    EXPECT_NO_THROW(c.get(matmul_epilogue_source(dt), "luminal_matmul_epilogue", "sm_90"))
        << dtype_name(dt);
  }
  EXPECT_THROW(matmul_epilogue_source(DType::I32), std::runtime_error);
  EXPECT_NO_THROW(c.get(tf32_split_source(), "luminal_tf32_split", "sm_90a"));
}

TEST(Nvrtc, TargetsTheDeviceArchitectureOrFallsBackToPtx) {
  EXPECT_EQ(nvrtc_target(9, 0), "sm_90a");
  EXPECT_EQ(nvrtc_target(8, 0), "sm_80");
  EXPECT_EQ(nvrtc_target(99, 9).rfind("compute_", 0),
            0u);  // newer than NVRTC knows: PTX for the driver
  gpu_test::expect_error([] { nvrtc_target(1, 0); }, {"[nvrtc]", "sm_10"});
}

TEST(Nvrtc, OptionsNameTheTargetAndAnExistingIncludeDir) {
  const std::vector<std::string> o = nvrtc_options("sm_90");
  EXPECT_NE(std::find(o.begin(), o.end(), "--gpu-architecture=sm_90"), o.end());
  bool include = false;
  for (const std::string& s : o)
    include |= s.rfind("-I", 0) == 0 && fs::exists(s.substr(2) + "/cuda_fp16.h");
  EXPECT_TRUE(include) << "no -I option points at the CUDA toolkit headers";
}

}  // namespace
}  // namespace luminal::cuda
