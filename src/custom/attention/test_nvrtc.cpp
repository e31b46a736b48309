// NVRTC compile checks of the generated CausalAttention kernel for sm_90 (no GPU needed): every
// dtype x q_pos dtype at Llama's decode shapes (d 64 and 128, groups 1, 4, 8), no local memory.
#include <gtest/gtest.h>
#include <nvrtc.h>

#include <regex>
#include <string>

#include "custom/attention/op.h"
#include "nvrtc/nvrtc_compile.h"

namespace luminal::custom {
namespace {

TEST(CausalAttentionNvrtc, CompilesForSm90WithoutSpills) {
  for (DType dt : {DType::F32, DType::BF16})
    for (DType pt : {DType::I32, DType::I64})
      for (int64_t d : {64, 128})
        for (int64_t kv : {32, 8, 4})
          for (bool split : {false, true}) {
            const AttentionShape s{32, kv, d, dt, pt};
            SCOPED_TRACE(fmt::format("H 32 KV {} d {} {} {} split {}", kv, d, dtype_name(dt),
                                     dtype_name(pt), split));
            const CustomKernel k = emit_causal_attention(s, 0.125, split);
            const test::NvrtcCompile r = test::nvrtc_compile_sm90(
                k.source, k.entry, {"-std=c++20", "-default-device", "--ptxas-options=-v"});
            ASSERT_TRUE(r.ok) << r.log << "\n" << test::numbered(k.source);
            std::smatch m;
            ASSERT_TRUE(std::regex_search(
                r.log, m, std::regex(R"((\d+) bytes stack frame, (\d+) bytes spill stores)")))
                << r.log;
            EXPECT_EQ(m[1].str(), "0") << r.log;
            EXPECT_EQ(m[2].str(), "0") << r.log;
          }
}

}  // namespace
}  // namespace luminal::custom
