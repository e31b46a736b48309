// Custom-op steps: the op's own CUDA kernel when it has one for these shapes, else its reference
// decomposition, lowered and compiled for the concrete input dims (what the CPU runtime runs).
#include <fmt/format.h>

#include <stdexcept>

#include "cuda/codegen/kernels.h"
#include "cuda/runtime/arena.h"
#include "cuda/runtime/cuda_plan.h"
#include "luminal/custom_op.h"

namespace luminal::cuda {

Op CudaPlan::custom_op(size_t step_index, const compiler::CustomStep& step,
                                const DynMap& dyn, const std::vector<CUdeviceptr>& ptrs) {
  const Node& node = graph_.node(step.node);
  std::vector<std::vector<int64_t>> dims;
  std::vector<DType> dtypes;
  std::vector<CUdeviceptr> in_ptrs;  // where each input's elements start
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    dims.push_back(eval_all(node.inputs[i].view.dims, dyn));
    dtypes.push_back(plan.buffers[size_t(step.inputs[i])].dtype);
    const int64_t off = step.input_offsets[i].eval(dyn);
    in_ptrs.push_back(ptrs[size_t(step.inputs[i])] + CUdeviceptr(off) * dtype_size(dtypes.back()));
  }
  Op op;
  int64_t numel = 1;
  for (int64_t d : eval_all(node.shape, dyn)) numel *= d;
  if (numel == 0) return op;  // an empty result: nothing to run
  std::optional<CustomKernel> ck = node.custom->cuda_kernel(KernelRequest{dims, dtypes, caps});
  if (!ck) {
    op.sub = decomposed_ops(step_index, step, dims, dtypes, size_t(numel), in_ptrs, ptrs);
    return op;
  }
  if (ck->grid[0] == 0 || ck->grid[1] == 0 || ck->grid[2] == 0) return op;
  const std::string key = fmt::format("{}\n{}\n{}", ck->entry, ck->shared_bytes, ck->source);
  auto it = custom_kernels.find(key);
  if (it == custom_kernels.end())
    it = custom_kernels.emplace(key, load_kernel(ck->source, ck->entry, ck->shared_bytes)).first;
  Launch l;
  l.fn = it->second.fn;
  for (size_t a = 0; a < 3; ++a) {
    l.grid[a] = ck->grid[a];
    l.block[a] = ck->block[a];
  }
  l.shared = ck->shared_bytes;
  // Parameters (custom_op.h): each input, the output, the error word, each input's element count.
  for (CUdeviceptr p : in_ptrs) l.values.push_back(p);
  l.values.push_back(ptrs[size_t(step.output)]);
  l.values.push_back(error_flag->ptr);
  for (const std::vector<int64_t>& d : dims) {
    int64_t n = 1;
    for (int64_t v : d) n *= v;
    l.values.push_back(static_cast<unsigned long long>(n));
  }
  l.values.push_back(custom_workspace(step_index, ck->workspace_bytes, node.custom->name()));
  op.launch = std::move(l);
  return op;
}

CUdeviceptr CudaPlan::custom_workspace(size_t step_index, size_t bytes,
                                                const std::string& op_name) {
  if (bytes == 0) return 0;
  if (custom_workspaces.size() < plan.steps.size()) custom_workspaces.resize(plan.steps.size());
  std::shared_ptr<DeviceAllocation>& w = custom_workspaces[step_index];
  if (!w || w->capacity < bytes) {
    w = device_alloc(dev, bytes, "the workspace of custom op " + op_name);
    // Ordered before the step's launches on the same stream; kept zero by the kernel afterwards.
    CHECK_CUDA(drv().cuMemsetD8Async(w->ptr, 0, w->capacity, stream));
  }
  return w->ptr;
}

std::vector<Op> CudaPlan::decomposed_ops(size_t step_index,
                                                  const compiler::CustomStep& step,
                                                  const std::vector<std::vector<int64_t>>& dims,
                                                  const std::vector<DType>& dtypes,
                                                  size_t out_numel,
                                                  const std::vector<CUdeviceptr>& in_ptrs,
                                                  const std::vector<CUdeviceptr>& ptrs) {
  const Node& node = graph_.node(step.node);
  const std::string what = "custom op " + node.custom->name();
  // The decomposition over inputs of these exact dims: a static graph of its own.
  Graph sub;
  std::vector<NodeId> input_ids;
  std::vector<GraphTensor> ins;
  for (size_t j = 0; j < dims.size(); ++j) {
    ins.push_back(sub.named_tensor(fmt::format("in{}", j),
                                   std::vector<Expr>(dims[j].begin(), dims[j].end()), dtypes[j]));
    input_ids.push_back(ins.back().id);
  }
  GraphTensor out = node.custom->decompose(sub, ins);
  if (out.dtype != node.dtype)
    throw std::logic_error(fmt::format("[cuda] {}: its decomposition yields {}, the node is {}",
                                       what, dtype_name(out.dtype), dtype_name(node.dtype)));
  out.output();
  const KernelPlan sp = codegen::lower_and_render(sub);

  // Inputs and the result live in the parent's buffers; intermediates in an arena of their own.
  std::vector<CUdeviceptr> sptrs(sp.buffers.size(), 0);
  std::vector<ArenaRequest> reqs(sp.buffers.size());
  std::vector<bool> used(sp.buffers.size(), false);
  for_each_buffer_use(sp, [&](int b, int s) {
    ArenaRequest& r = reqs[size_t(b)];
    if (!used[size_t(b)]) r.first = r.last = s;
    r.first = std::min(r.first, s);
    r.last = std::max(r.last, s);
    used[size_t(b)] = true;
  });
  for (size_t b = 0; b < sp.buffers.size(); ++b) {
    const compiler::PlanBuffer& pb = sp.buffers[b];
    const size_t bytes = size_t(pb.numel.eval({})) * dtype_size(pb.dtype);
    if (pb.kind == compiler::PlanBuffer::Kind::Input) {
      for (size_t j = 0; j < input_ids.size(); ++j)
        if (input_ids[j] == pb.node) sptrs[b] = in_ptrs[j];
    } else if (pb.kind == compiler::PlanBuffer::Kind::Output) {
      if (bytes != out_numel * dtype_size(node.dtype))
        throw std::logic_error(
            fmt::format("[cuda] {}: its decomposition's result has {} bytes, the node {}", what,
                        bytes, out_numel * dtype_size(node.dtype)));
      sptrs[b] = ptrs[size_t(step.output)];
    } else if (used[b]) {
      reqs[b].bytes = bytes;
    }
  }
  const ArenaLayout layout = plan_arena(reqs);
  if (custom_arenas.size() < plan.steps.size()) custom_arenas.resize(plan.steps.size());
  std::shared_ptr<DeviceAllocation>& arena_i = custom_arenas[step_index];
  if (layout.total > 0 && (!arena_i || arena_i->capacity < layout.total))
    arena_i = device_alloc(dev, layout.total, "the decomposition of " + what);
  for (size_t b = 0; b < sp.buffers.size(); ++b)
    if (reqs[b].bytes > 0) sptrs[b] = arena_i->ptr + layout.offsets[b];

  std::vector<Op> out_ops;
  const DynMap none;
  const StepContext c{none, dev.sm_count, sptrs, error_flag->ptr, labels[step_index]};
  for (const compiler::Step& st : sp.steps) {
    Op o;
    o.label = &labels[step_index];
    if (const auto* k = std::get_if<compiler::KernelStep>(&st)) {
      o.launch = kernel_launch(*k, load_kernel(k->source, k->name, k->shared_bytes).fn, c);
    } else if (const auto* m = std::get_if<compiler::MatmulStep>(&st)) {
      if (!blas)
        blas = std::make_unique<CublasLt>(dev, target, fp32_math(precision),
                                          opts.matmul_autotune);
      o.matmul = matmul_call(*m, *blas, c);
    } else {
      throw std::runtime_error(
          fmt::format("[cuda] {} has no CUDA kernel for these shapes and its decomposition uses "
                      "another custom op",
                      what));
    }
    out_ops.push_back(std::move(o));
  }
  return out_ops;
}

}  // namespace luminal::cuda
