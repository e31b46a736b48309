// The Llama step graph (examples/llama) lowers for the CUDA runtime and every generated kernel
// compiles with NVRTC, in f32 and bf16: the GPU path has what it needs before a device runs it.
#include <gtest/gtest.h>

#include <variant>

#include "cuda/codegen/kernels.h"
#include "compiler/kernel_plan.h"
#include "luminal/models/llama.h"
#include "luminal/nn.h"
#include "nvrtc/nvrtc_compile.h"

namespace luminal {
namespace {

TEST(CodegenCompile, LlamaStepGraph) {
  models::LlamaConfig c;
  c.vocab_size = 64;
  c.hidden_size = 32;
  c.intermediate_size = 64;
  c.num_layers = 1;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.head_dim = 8;
  c.max_position_embeddings = 128;
  for (DType dt : {DType::F32, DType::BF16}) {
    Graph g;
    models::build_llama(g, c, 32, dt);
    compiler::LowerOptions opts;
    opts.dim_hints = {{models::LlamaGraph::kSeq, 1}};
    const compiler::KernelPlan plan = cuda::codegen::lower_and_render(g, opts);
    size_t kernels = 0;
    for (const compiler::Step& s : plan.steps) {
      if (const auto* k = std::get_if<compiler::KernelStep>(&s)) {
        EXPECT_TRUE(test::nvrtc_compiles(k->source, k->name)) << dtype_name(dt);
        ++kernels;
      }
    }
    EXPECT_GT(kernels, 0u);
  }
}

}  // namespace
}  // namespace luminal
