// Reduction kernels (SumReduce, MaxReduce): a thread, a warp or a block per output element.
// The reduced input expression is inlined into the loop body, so e.g. a matmul-shaped
// Mul + SumReduce reads both operands straight from their buffers.
#include <stdexcept>

#include <fmt/format.h>

#include "cuda/codegen/dtype_code.h"
#include "cuda/codegen/kernels.h"

namespace luminal::cuda::codegen {

namespace {

constexpr unsigned kBlock = 256;

// Initial accumulator: 0 for sums, -inf (or INT64_MIN) for max.
std::string init_code(bool is_max, DType acc) {
  if (!is_max) return zero(acc);
  if (acc == DType::I64) return "(-9223372036854775807LL - 1LL)";
  return acc == DType::F64 ? "(-__longlong_as_double(0x7ff0000000000000LL))" : "(-__int_as_float(0x7f800000))";
}

std::string combine_code(bool is_max, DType acc, const std::string& a, const std::string& v) {
  if (is_max) return fmt::format("lum_max_nan({}, {})", a, v);
  return acc == DType::I64 ? fmt::format("lum_add_ll({}, {})", a, v) : fmt::format("{} + {}", a, v);
}

}  // namespace

namespace {

// Names of the output index and the first lane, after the mode's prologue.
struct Work {
  std::string o, lane;
  unsigned lanes;
};

Work reduce_prologue(KernelWriter& w, ReduceMode mode) {
  if (mode == ReduceMode::Block) {
    w.let_named("long long", "o", "(long long)blockIdx.x");
    return {"o", "threadIdx.x", kBlock};
  }
  w.let_named("long long", "i", w.thread_index());
  if (mode == ReduceMode::Thread) return {"i", "0", 1};
  w.let_named("long long", "o", "i >> 5");
  w.let_named("int", "lane", "threadIdx.x & 31");
  return {"o", "lane", 32};
}

const NodeInput& check_reduction(const Graph& g, NodeId id) {
  const Node& n = g.node(id);
  if ((n.kind != OpKind::MaxReduce && n.kind != OpKind::SumReduce) || n.inputs.size() != 1) {
    throw std::logic_error(fmt::format("[codegen] node {} is not a one-input reduction", id));
  }
  const NodeInput& in = n.inputs[0];
  if (n.axis < 0 || static_cast<size_t>(n.axis) > n.shape.size() || in.view.rank() != n.shape.size() + 1) {
    throw std::invalid_argument(fmt::format("[lower] {} node {}: axis {} does not fit input rank {} and output rank {}",
                                            op_name(n.kind), id, n.axis, in.view.rank(), n.shape.size()));
  }
  return in;
}

}  // namespace

compiler::KernelStep emit_reduce(const Graph& g, const compiler::KernelPlan& plan, NodeId id,
                                 int out_buffer, std::optional<NodeId> epilogue,
                                 std::optional<ReduceMode> mode_override, Flavor flavor) {
  const Node& n = g.node(id);
  const NodeInput& in = check_reduction(g, id);
  const bool is_max = n.kind == OpKind::MaxReduce;
  const DType in_dt = g.node(in.node).dtype, acc_dt = accumulator_dtype(in_dt);
  const std::string at(value_type(acc_dt));
  const Expr len = in.view.dims[n.axis], outs = product(n.shape);
  // Host code has no warps or blocks: a work item per output, its loop vectorized by the compiler.
  const ReduceMode mode =
      flavor == Flavor::Host ? ReduceMode::Thread : mode_override.value_or(choose_reduce_mode(len));

  KernelWriter w(g, plan, kernel_name(g, id), flavor);
  w.note_node(id);
  const std::string out = w.buffer(out_buffer, true);
  const Work work = reduce_prologue(w, mode);
  w.line(fmt::format("if ({} >= {}) return;", work.o, w.dim(outs)));  // uniform per warp / block
  const Index out_idx = w.unflatten(work.o, n.shape, "i");
  w.line(fmt::format("{} acc = {};", at, init_code(is_max, acc_dt)));
  w.open(fmt::format("for (long long r = {}; r < {}; r += {})", work.lane, w.dim(len), work.lanes));
  Index idx = out_idx;
  idx.insert(idx.begin() + n.axis, "r");
  const std::string v = convert(in_dt, acc_dt, w.read(in, idx));
  w.line(fmt::format("acc = {};", combine_code(is_max, acc_dt, "acc", v)));
  w.close();
  const std::string op = is_max ? "LumMax()" : "LumSum()";
  if (mode == ReduceMode::Warp) {
    w.line(fmt::format("acc = lum_warp_reduce(acc, {});", op));
    w.open("if (lane == 0)");
  } else if (mode == ReduceMode::Block) {
    w.line(fmt::format("__shared__ {} smem[32];", at));
    w.line(fmt::format("acc = lum_block_reduce(acc, {}, smem);", op));
    w.open("if (threadIdx.x == 0)");
  }
  // The reduced value; with an epilogue, the Output's expression reads it at the output index.
  const std::string rv = w.let(value_type(n.dtype), fmt::format("v{}", id), convert(acc_dt, n.dtype, "acc"));
  w.bind_value(id, out_idx, rv);
  const std::string result = epilogue ? w.compute(*epilogue, out_idx) : rv;
  w.line(fmt::format("{}[{}] = {};", out, work.o, store_code(epilogue ? g.node(*epilogue).dtype : n.dtype, result)));
  if (mode != ReduceMode::Thread) w.close();
  std::string summary = fmt::format("%{} {} over axis {} (length {}), a {} per output", id, op_name(n.kind),
                                    n.axis, len.to_string(),
                                    mode == ReduceMode::Thread ? "thread" : mode == ReduceMode::Warp ? "warp" : "block");
  if (epilogue) summary += fmt::format(", then %{} {}", *epilogue, op_name(g.node(*epilogue).kind));
  return w.finish(outs * Expr(static_cast<int64_t>(work.lanes)), mode == ReduceMode::Block ? kBlock : 256, summary,
                  {"common.cuh", "reduce.cuh"});
}

compiler::KernelStep emit_online_softmax(const Graph& g, const compiler::KernelPlan& plan, NodeId sum, NodeId max,
                                         double scale, Flavor flavor) {
  const Node& n = g.node(max);
  const NodeInput& in = check_reduction(g, max);
  const DType in_dt = g.node(in.node).dtype, acc_dt = accumulator_dtype(in_dt);
  const std::string at(value_type(acc_dt));
  const Expr len = in.view.dims[n.axis], outs = product(n.shape);
  const ReduceMode mode = flavor == Flavor::Host ? ReduceMode::Thread : choose_reduce_mode(len);

  KernelWriter w(g, plan, kernel_name(g, sum, "online_softmax"), flavor);
  w.note_node(max);
  w.note_node(sum);
  const std::string out_m = w.buffer(plan.buffer_of_node.at(max), true);
  const std::string out_s = w.buffer(plan.buffer_of_node.at(sum), true);
  const Work work = reduce_prologue(w, mode);
  w.line(fmt::format("if ({} >= {}) return;", work.o, w.dim(outs)));
  const Index out_idx = w.unflatten(work.o, n.shape, "i");
  // The scale as stored in the dtype (the reference multiplies by the rounded constant).
  const std::string c = w.let(at, "c", fmt::format("({}){}", at, literal(g.node(sum).dtype, scale)));
  w.line(fmt::format("{} m = {};", at, init_code(true, acc_dt)));
  w.line(fmt::format("{} s = {};", at, zero(acc_dt)));
  w.open(fmt::format("for (long long r = {}; r < {}; r += {})", work.lane, w.dim(len), work.lanes));
  Index idx = out_idx;
  idx.insert(idx.begin() + n.axis, "r");
  w.line(fmt::format("lum_online_add(m, s, {}, {});", convert(in_dt, acc_dt, w.read(in, idx)), c));
  w.close();
  if (mode == ReduceMode::Warp) {
    w.line(fmt::format("lum_warp_online(m, s, {});", c));
    w.open("if (lane == 0)");
  } else if (mode == ReduceMode::Block) {
    w.line(fmt::format("__shared__ {} sm[32], ss[32];", at));
    w.line(fmt::format("lum_block_online(m, s, {}, sm, ss);", c));
    w.open("if (threadIdx.x == 0)");
  }
  w.line(fmt::format("{}[{}] = {};", out_m, work.o, store_code(n.dtype, convert(acc_dt, n.dtype, "m"))));
  const DType sdt = g.node(sum).dtype;
  w.line(fmt::format("{}[{}] = {};", out_s, work.o, store_code(sdt, convert(acc_dt, sdt, "lum_online_sum(m, s)"))));
  if (mode != ReduceMode::Thread) w.close();
  const std::string summary = fmt::format("online softmax: %{} MaxReduce and %{} SumReduce of exp2((x - max) * {}) "
                                          "over axis {} (length {}) in one pass", max, sum, scale, n.axis,
                                          len.to_string());
  return w.finish(outs * Expr(static_cast<int64_t>(work.lanes)), mode == ReduceMode::Block ? kBlock : 256, summary,
                  {"common.cuh", "reduce.cuh"});
}

}  // namespace luminal::cuda::codegen
