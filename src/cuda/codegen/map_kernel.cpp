// Elementwise map kernels (outputs, copies, materialized elementwise roots) and Scatter.
#include <stdexcept>

#include <fmt/format.h>

#include "cuda/codegen/dtype_code.h"
#include "cuda/codegen/kernels.h"

namespace luminal::cuda::codegen {

namespace {

// `const long long <name> = global thread index;` plus the bounds check against n.
void thread_prologue(KernelWriter& w, const std::string& n) {
  w.let_named("long long", "i", w.thread_index());
  w.line(fmt::format("if (i >= {}) return;", n));
}

}  // namespace

std::string kernel_name(const Graph& g, NodeId id, const std::string& suffix) {
  std::string s = fmt::format("k{}_{}", id, snake_name(g.node(id).kind));
  return suffix.empty() ? s : s + "_" + suffix;
}

compiler::KernelStep emit_map(const Graph& g, const compiler::KernelPlan& plan, const std::string& name,
                              int out_buffer, const std::vector<Expr>& dims, const ValueFn& value,
                              const std::string& summary, Flavor flavor) {
  KernelWriter w(g, plan, name, flavor);
  const DType dt = plan.buffers.at(out_buffer).dtype;
  const std::string out = w.buffer(out_buffer, true);
  const Expr n = product(dims);
  thread_prologue(w, w.dim(n));
  const Index idx = w.unflatten("i", dims, "i");
  const std::string v = value(w, idx);
  w.line(fmt::format("{}[i] = {};", out, store_code(dt, v)));
  return w.finish(n, 256, summary);
}

compiler::KernelStep emit_scatter_rows(const Graph& g, const compiler::KernelPlan& plan, NodeId id,
                                       int out_buffer, Flavor flavor) {
  const Node& n = g.node(id);  // checked by the lowering (check_scatter)
  const NodeInput &ix = n.inputs[1], &src = n.inputs[2];
  const DType it = g.node(ix.node).dtype;
  KernelWriter w(g, plan, kernel_name(g, id, "rows"), flavor);
  const std::string out = w.buffer(out_buffer, true);
  const std::vector<Expr> row_dims(n.shape.begin() + 1, n.shape.end());
  const Expr row_len = product(row_dims), total = ix.view.numel() * row_len;
  thread_prologue(w, w.dim(total));
  const bool unit_rows = row_len.as_const() == 1;
  const std::string rl = w.dim(row_len);
  const std::string nf = unit_rows ? "i" : w.let("long long", "n", fmt::format("i / {}", rl));
  const std::string jf = unit_rows ? "0" : w.let("long long", "j", fmt::format("i % {}", rl));
  const Index nidx = w.unflatten(nf, ix.view.dims, "n");
  const std::string raw = w.read(ix, nidx);
  const std::string row = w.let("long long", "row", fmt::format("lum_clamp_row({}, {}, {}, LUM_ERR_SCATTER)",
                                                                convert(it, DType::I64, raw),
                                                                w.dim(n.shape[0]), w.error_flag()));
  Index sidx = nidx;
  if (!unit_rows) {
    const Index jidx = w.unflatten(jf, row_dims, "j");
    sidx.insert(sidx.end(), jidx.begin(), jidx.end());
  } else {
    sidx.resize(src.view.rank(), "0");
  }
  const std::string v = w.read(src, sidx);
  const std::string dst = unit_rows ? row : fmt::format("{} * {} + {}", row, rl, jf);
  w.line(fmt::format("{}[{}] = {};", out, dst, store_code(n.dtype, v)));
  w.note_node(id);
  return w.finish(total, 256, fmt::format("%{} Scatter, rows of src at idx (duplicates: any one wins)", id));
}

}  // namespace luminal::cuda::codegen
