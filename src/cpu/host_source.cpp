#include "cpu/host_source.h"

#include <fmt/format.h>

#include <algorithm>

#include "cuda/codegen/dtype_code.h"
#include "cuda/codegen/embedded.h"
#include "cuda/codegen/kernels.h"

namespace luminal::cpu {

HostSource host_source(const Graph& g, compiler::KernelPlan& plan) {
  namespace cg = cuda::codegen;
  cg::render(g, plan, cg::Flavor::Host);
  HostSource out;
  out.text = "// luminal CPU backend: generated kernels (src/cpu/host_source.cpp)\n";
  out.text += std::string(embedded_headers().at("host_common.h"));
  for (size_t s = 0; s < plan.steps.size(); ++s) {
    const auto* k = std::get_if<compiler::KernelStep>(&plan.steps[s]);
    if (k == nullptr) continue;
    HostEntry e;
    e.step = s;
    e.symbol = "lum_run_" + k->name;
    std::vector<std::string> args;
    for (const compiler::KernelArg& a : k->args) {
      switch (a.kind) {
        case compiler::KernelArg::Kind::Buffer: {
          const bool write = std::find(k->writes.begin(), k->writes.end(), a.buffer) != k->writes.end();
          const std::string_view t = cg::storage_type(plan.buffers.at(size_t(a.buffer)).dtype);
          args.push_back(fmt::format("({}{}*)b[{}]", write ? "" : "const ", t, e.buffers.size()));
          e.buffers.push_back(a.buffer);
          break;
        }
        case compiler::KernelArg::Kind::Dim:
          args.push_back(fmt::format("d[{}]", e.dims.size()));
          e.dims.push_back(a.sym);
          break;
        case compiler::KernelArg::Kind::ErrorFlag: args.push_back("err"); break;
      }
    }
    // Work items are independent (GPU threads), so elementwise kernels run as SIMD lanes; not
    // where items may write one error word, nor reductions (their inner loops vectorize as they are).
    using SpecKind = compiler::KernelSpec::Kind;
    const bool error_word = std::any_of(k->args.begin(), k->args.end(), [](const compiler::KernelArg& a) {
      return a.kind == compiler::KernelArg::Kind::ErrorFlag;
    });
    const bool simd = !error_word && (k->spec.kind == SpecKind::Compute || k->spec.kind == SpecKind::CopyInput);
    out.text += "\n" + k->source;
    out.text += fmt::format(
        "extern \"C\" void {}(void* const* b, const long long* d, int* err, long long lo, long long hi) {{\n"
        "  (void)b; (void)d; (void)err;\n"
        "{}  for (long long t = lo; t < hi; ++t) {}(t{}{});\n}}\n",
        e.symbol, simd ? "#pragma omp simd\n" : "", k->name, args.empty() ? "" : ", ", fmt::join(args, ", "));
    out.entries.push_back(std::move(e));
  }
  return out;
}

}  // namespace luminal::cpu
