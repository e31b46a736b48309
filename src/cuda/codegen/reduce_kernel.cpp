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

ReduceMode choose_reduce_mode(const Expr& len) {
  auto c = len.as_const();
  if (!c) return ReduceMode::Warp;
  if (*c < 64) return ReduceMode::Thread;
  return *c >= 4096 ? ReduceMode::Block : ReduceMode::Warp;
}

compiler::KernelStep emit_reduce(const Graph& g, const compiler::KernelPlan& plan, NodeId id,
                                 int out_buffer) {
  const Node& n = g.node(id);
  const bool is_max = n.kind == OpKind::MaxReduce;
  if ((!is_max && n.kind != OpKind::SumReduce) || n.inputs.size() != 1) {
    throw std::logic_error(fmt::format("[codegen] node {} is not a one-input reduction", id));
  }
  const NodeInput& in = n.inputs[0];
  if (n.axis < 0 || static_cast<size_t>(n.axis) > n.shape.size() || in.view.rank() != n.shape.size() + 1) {
    throw std::invalid_argument(fmt::format("[lower] {} node {}: axis {} does not fit input rank {} and output rank {}",
                                            op_name(n.kind), id, n.axis, in.view.rank(), n.shape.size()));
  }
  const DType in_dt = g.node(in.node).dtype, acc_dt = accumulator_dtype(in_dt);
  const std::string at(value_type(acc_dt));
  const Expr len = in.view.dims[n.axis], outs = product(n.shape);
  const ReduceMode mode = choose_reduce_mode(len);
  const unsigned lanes = mode == ReduceMode::Thread ? 1 : mode == ReduceMode::Warp ? 32 : kBlock;

  KernelWriter w(g, plan, kernel_name(g, id));
  w.note_node(id);
  const std::string out = w.buffer(out_buffer, true);
  const std::string nout = w.dim(outs), l = w.dim(len);
  std::string o = "i", lane = "0";
  if (mode == ReduceMode::Block) {
    w.let_named("long long", "o", "(long long)blockIdx.x");
    o = "o";
    lane = "threadIdx.x";
  } else {
    w.let_named("long long", "i", "(long long)blockIdx.x * blockDim.x + threadIdx.x");
    if (mode == ReduceMode::Warp) {
      w.let_named("long long", "o", "i >> 5");
      w.let_named("int", "lane", "threadIdx.x & 31");
      o = "o";
      lane = "lane";
    }
  }
  w.line(fmt::format("if ({} >= {}) return;", o, nout));  // uniform per warp / block
  Index idx = w.unflatten(o, n.shape, "i");
  w.line(fmt::format("{} acc = {};", at, init_code(is_max, acc_dt)));
  w.open(fmt::format("for (long long r = {}; r < {}; r += {})", lane, l, lanes));
  idx.insert(idx.begin() + n.axis, "r");
  const std::string v = convert(in_dt, acc_dt, w.read(in, idx));
  w.line(fmt::format("acc = {};", combine_code(is_max, acc_dt, "acc", v)));
  w.close();
  const std::string op = is_max ? "LumMax()" : "LumSum()";
  std::string writer_cond;
  if (mode == ReduceMode::Warp) {
    w.line(fmt::format("acc = lum_warp_reduce(acc, {});", op));
    writer_cond = "if (lane == 0) ";
  } else if (mode == ReduceMode::Block) {
    w.line(fmt::format("__shared__ {} smem[32];", at));
    w.line(fmt::format("acc = lum_block_reduce(acc, {}, smem);", op));
    writer_cond = "if (threadIdx.x == 0) ";
  }
  w.line(fmt::format("{}{}[{}] = {};", writer_cond, out, o, store_code(n.dtype, convert(acc_dt, n.dtype, "acc"))));
  const std::string summary = fmt::format("%{} {} over axis {} (length {}), a {} per output", id, op_name(n.kind),
                                          n.axis, len.to_string(),
                                          mode == ReduceMode::Thread ? "thread" : mode == ReduceMode::Warp ? "warp" : "block");
  return w.finish(outs * Expr(static_cast<int64_t>(lanes)), mode == ReduceMode::Block ? kBlock : 256, summary,
                  {"common.cuh", "reduce.cuh"});
}

}  // namespace luminal::cuda::codegen
