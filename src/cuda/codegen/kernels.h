// The codegen: renders the lowering's KernelSpecs into CUDA sources (render), with one emitter per
// kernel family. Each emitter returns a complete KernelStep (source, args, grid). How to add a
// family: a KernelSpec::Kind (compiler/kernel_plan.h) the lowering fills in, an emit_* here on top
// of KernelWriter, its case in render.cpp, and a compile test in tests/nvrtc/test_codegen_compile.cpp.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "compiler/kernel_plan.h"
#include "cuda/codegen/kernel_writer.h"

namespace luminal::cuda::codegen {

/// Computes the value of an element at a logical index inside a kernel.
using ValueFn = std::function<std::string(KernelWriter&, const Index&)>;

/// Elementwise "map": out[i] = value(idx(i)) over the row-major dims, one thread per element.
compiler::KernelStep emit_map(const Graph& g, const compiler::KernelPlan& plan, const std::string& name,
                              int out_buffer, const std::vector<Expr>& dims, const ValueFn& value,
                              const std::string& summary, Flavor flavor = Flavor::Cuda);

using compiler::ReduceMode;
using compiler::choose_reduce_mode;

/// Renders every KernelStep of the plan from its spec (source, name, parameters, launch shape, the
/// buffers it reads and writes); steps already rendered are kept. LUMINAL_DEBUG=2 prints each step.
/// Flavor::Host writes host C++ (every reduction a work item per output) for the CPU backend.
void render(const Graph& g, compiler::KernelPlan& plan, Flavor flavor = Flavor::Cuda);

/// compiler::lower followed by render: a plan ready for the runtime.
compiler::KernelPlan lower_and_render(const Graph& g, const compiler::LowerOptions& opts = {});
/// SumReduce / MaxReduce node `id` into out_buffer (float accumulation for 16/32-bit floats,
/// double for f64, int64 for integers; NaN propagates through max). With `epilogue` (an Output of
/// the reduction's shape), out_buffer receives that Output's value computed from the reduced one.
/// `mode` overrides choose_reduce_mode (a search choice).
compiler::KernelStep emit_reduce(const Graph& g, const compiler::KernelPlan& plan, NodeId id,
                                 int out_buffer, std::optional<NodeId> epilogue = std::nullopt,
                                 std::optional<ReduceMode> mode = std::nullopt,
                                 Flavor flavor = Flavor::Cuda);

/// Online softmax: one pass computes MaxReduce `max` (m = max x) and SumReduce `sum`
/// (s = sum exp2((x - m) * scale)) into their plan buffers, rescaling s as m grows.
compiler::KernelStep emit_online_softmax(const Graph& g, const compiler::KernelPlan& plan, NodeId sum,
                                         NodeId max, double scale, Flavor flavor = Flavor::Cuda);

/// Scatter node `id`'s rows: src rows written at the (clamped, flagged) indices into out_buffer,
/// which already holds dest (a copy, or dest's own buffer updated in place). With duplicate
/// indices it is unspecified which row wins.
compiler::KernelStep emit_scatter_rows(const Graph& g, const compiler::KernelPlan& plan, NodeId id,
                                       int out_buffer, Flavor flavor = Flavor::Cuda);

/// Kernel name for a node: "k7_sum_reduce" (+ "_" + suffix when given).
std::string kernel_name(const Graph& g, NodeId id, const std::string& suffix = "");

}  // namespace luminal::cuda::codegen
