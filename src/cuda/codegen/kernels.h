// Kernel emitters, one per kernel family. Each returns complete KernelSteps (source, args, grid).
// How to add a family: write an emit_* here on top of KernelWriter, call it from
// src/compiler/lower.cpp, and compile it in tests/nvrtc/test_codegen_compile.cpp.
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
                              const std::string& summary);

/// How a reduction kernel assigns work.
enum class ReduceMode { Thread, Warp, Block };
/// Thread per output for short constant axes (< 64), a warp for longer or symbolic ones, a block
/// for very long constant ones (>= 4096).
ReduceMode choose_reduce_mode(const Expr& len);
/// SumReduce / MaxReduce node `id` into out_buffer (float accumulation for 16/32-bit floats,
/// double for f64, int64 for integers; NaN propagates through max). With `epilogue` (an Output of
/// the reduction's shape), out_buffer receives that Output's value computed from the reduced one.
/// `mode` overrides choose_reduce_mode (a search choice).
compiler::KernelStep emit_reduce(const Graph& g, const compiler::KernelPlan& plan, NodeId id,
                                 int out_buffer, std::optional<NodeId> epilogue = std::nullopt,
                                 std::optional<ReduceMode> mode = std::nullopt);

/// Online softmax: one pass computes MaxReduce `max` (m = max x) and SumReduce `sum`
/// (s = sum exp2((x - m) * scale)) into their plan buffers, rescaling s as m grows.
compiler::KernelStep emit_online_softmax(const Graph& g, const compiler::KernelPlan& plan, NodeId sum,
                                         NodeId max, double scale);

/// Scatter node `id` into out_buffer: a copy of dest (unless `copy_dest` is false: out_buffer is
/// dest's own buffer, updated in place), then a kernel writing src rows at the (clamped, flagged)
/// indices. With duplicate indices it is unspecified which row wins.
std::vector<compiler::KernelStep> emit_scatter(const Graph& g, const compiler::KernelPlan& plan,
                                               NodeId id, int out_buffer, bool copy_dest = true);

/// Kernel name for a node: "k7_sum_reduce" (+ "_" + suffix when given).
std::string kernel_name(const Graph& g, NodeId id, const std::string& suffix = "");

}  // namespace luminal::cuda::codegen
