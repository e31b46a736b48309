// render(): the lowering's KernelSpecs become CUDA sources. The only place the plan meets codegen,
// so the flow stays one way: lowering -> plan (data) -> codegen -> runtime.
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "cuda/codegen/kernels.h"
#include "io/environment.h"

namespace luminal::cuda::codegen {

namespace {

using compiler::KernelSpec;
using compiler::KernelStep;

KernelStep render_spec(const Graph& g, const compiler::KernelPlan& plan, const KernelSpec& k,
                       Flavor flavor) {
  switch (k.kind) {
    case KernelSpec::Kind::Compute: {
      const NodeId id = k.node;
      return emit_map(
          g, plan, kernel_name(g, id, k.suffix), k.out, k.dims,
          [id](KernelWriter& w, const Index& idx) { return w.compute(id, idx); }, k.summary,
          flavor);
    }
    case KernelSpec::Kind::CopyInput: {
      const NodeInput& in = g.node(k.node).inputs.at(size_t(k.input));
      return emit_map(
          g, plan, kernel_name(g, k.node, k.suffix), k.out, k.dims,
          [&in](KernelWriter& w, const Index& idx) { return w.read(in, idx); }, k.summary,
          flavor);
    }
    case KernelSpec::Kind::Reduce:
      return emit_reduce(g, plan, k.node, k.out,
                         k.epilogue < 0 ? std::nullopt : std::optional<NodeId>(NodeId(k.epilogue)),
                         k.mode, flavor);
    case KernelSpec::Kind::OnlineSoftmax:
      return emit_online_softmax(g, plan, k.node, k.other, k.scale, flavor);
    case KernelSpec::Kind::ScatterRows:
      return emit_scatter_rows(g, plan, k.node, k.out, flavor);
  }
  throw std::logic_error("[codegen] unknown kernel spec kind");
}

}  // namespace

void render(const Graph& g, compiler::KernelPlan& plan, Flavor flavor) {
  const bool print = io::debug_level() >= 2;
  for (compiler::Step& s : plan.steps) {
    if (auto* k = std::get_if<KernelStep>(&s); k != nullptr && k->source.empty()) {
      KernelStep r = render_spec(g, plan, k->spec, flavor);
      r.spec = std::move(k->spec);
      *k = std::move(r);
    }
    if (print) std::fprintf(stderr, "%s\n", compiler::describe(s).c_str());
  }
}

compiler::KernelPlan lower_and_render(const Graph& g, const compiler::LowerOptions& opts) {
  compiler::KernelPlan plan = compiler::lower(g, opts);
  render(g, plan);
  return plan;
}

}  // namespace luminal::cuda::codegen
