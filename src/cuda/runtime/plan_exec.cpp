// Running the plan: resolve (dims, arena, parameters, capture) on the slow path; one graph
// launch on the hot path.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <stdexcept>

#include "cuda/runtime/arena.h"
#include "cuda/runtime/gemv.h"
#include "cuda/runtime/nvrtc.h"
#include "cuda/runtime/cuda_plan.h"

namespace luminal::cuda {
namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};

int64_t eval_checked(const Expr& e, const DynMap& dyn, std::string_view what) {
  int64_t v = e.eval(dyn);
  if (v < 0) throw std::runtime_error(fmt::format("[execute] {} = {} is negative", what, v));
  return v;
}

}  // namespace

CudaPlan::~CudaPlan() {
  if (stream != nullptr) {
    CUresult r = drv().cuStreamSynchronize(stream);  // queued work may still use our memory
    if (r != CUDA_SUCCESS)
      std::fprintf(stderr, "[cuda] cuStreamSynchronize failed: %s\n", cuda_error_text(r).c_str());
  }
}

bool CudaPlan::inputs_ready() const {
  for (NodeId id : plan_inputs)
    if (!inputs[id].has_data) return false;
  return true;
}

void CudaPlan::execute(const DynMap& dyn, bool consume) {
  dev.make_current();
  for (int b : output_buffers) outputs[size_t(b)].valid = false;
  bool need_resolve = dirty || !resolved;
  for (size_t i = 0; i < symbols.size() && !need_resolve; ++i) {
    auto it = dyn.find(symbols[i]);
    need_resolve = it == dyn.end() || it->second != sym_values[i];
  }
  for (NodeId id : plan_inputs) {
    if (!inputs[id].has_data) [[unlikely]]
      throw std::runtime_error(
          fmt::format("[execute] input '{}' has no data (set_data/load_safetensors not called, or "
                      "consumed by a "
                      "previous execute)",
                      graph_.node(id).name));
  }
  try {
    if (need_resolve) {
      const bool warm = resolve(dyn);
      if (poison) poison_buffers();
      refresh_fp8_weights();
      if (opts.cuda_graph && warm && graph_exec) {
        // Only pointers changed: the same kernels ran before; patch the graph and replay it.
        capture_graph();
        launch_plan();
      } else {
        // First run or new dims: step by step (loads every kernel; errors name the step), then
        // capture.
        upload_staged();
        run_ops(stream, debug_level() >= 1);
        if (opts.cuda_graph) capture_graph();
      }
    } else {
      if (poison) poison_buffers();
      refresh_fp8_weights();
      launch_plan();
    }
  } catch (...) {
    dirty = true;  // re-resolve from scratch next time
    throw;
  }
  for (int b : output_buffers) outputs[size_t(b)].valid = true;
  if (!consume) return;
  // Consumed-input semantics: owned, non-persisted inputs lose their data. The memory is kept
  // for the next upload, so the captured graph's pointers usually stay valid.
  for (NodeId id : input_nodes) {
    InputSlot& s = inputs[id];
    if (s.has_data && !s.persist && s.external == 0) s.has_data = false;
  }
}

// Returns true when the dims equal those of the previous resolve and no new cuBLASLt algorithm
// was chosen: then every kernel this plan launches has run (and is loaded) already.
bool CudaPlan::resolve(const DynMap& dyn) {
  resolved = false;
  const size_t algos_before = blas ? blas->algorithms_chosen() : 0;
  std::vector<int64_t> values(symbols.size());
  for (size_t i = 0; i < symbols.size(); ++i) {
    auto it = dyn.find(symbols[i]);
    if (it == dyn.end())
      throw std::runtime_error(
          fmt::format("[execute] dynamic dim '{}' has no value in the DynMap", symbols[i]));
    values[i] = it->second;
  }
  std::vector<size_t> bytes = buffer_sizes(dyn);
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    const compiler::PlanBuffer& pb = plan.buffers[b];
    if (pb.kind != compiler::PlanBuffer::Kind::Input || !buffer_used[b]) continue;
    const InputSlot& s = slot(pb.node);
    if (s.bytes != bytes[b]) {
      const Node& n = graph_.node(pb.node);
      throw std::runtime_error(
          fmt::format("[execute] input '{}' has {} bytes, shape {} {} needs {}", n.name, s.bytes,
                      shape_string(n.shape), dtype_name(n.dtype), bytes[b]));
    }
  }
  // Queued work may still use memory that is about to be replaced. Only new dims grow (replace)
  // the arena, owned outputs or custom-op scratch; a changed pointer alone needs no sync, since a
  // graph update never affects launches already enqueued.
  if (!ever_resolved || values != sym_values) sync_stream();
  if (!reserve_dim_name.empty() && !reserved_for_bucket) reserve_for_bucket(dyn);
  const std::vector<CUdeviceptr> ptrs = place_buffers(bytes);
  build_ops(dyn, ptrs);
  buffer_ptrs = ptrs;
  buffer_bytes = std::move(bytes);
  if (graph_branches == 1 && (!gemv_group_fns.empty() || !gemv_residual_fusions.empty()))
    fuse_gemv_ops();
  const bool warm =
      ever_resolved && values == sym_values && (!blas || blas->algorithms_chosen() == algos_before);
  sym_values = std::move(values);
  resolved = ever_resolved = true;
  dirty = false;
  return warm;
}

// Bytes of every plan buffer at these dims (0 for a dead one).
std::vector<size_t> CudaPlan::buffer_sizes(const DynMap& dyn) const {
  std::vector<size_t> bytes(plan.buffers.size());
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    const compiler::PlanBuffer& pb = plan.buffers[b];
    if (!buffer_used[b] && pb.kind != compiler::PlanBuffer::Kind::Output) continue;  // dead: size 0
    const int64_t numel =
        eval_checked(pb.numel, dyn, fmt::format("size of buffer {} ({})", b, node_label(pb.node)));
    bytes[b] = size_t(numel) * dtype_size(pb.dtype);
  }
  return bytes;
}

// A bucket's plan: the arena and owned outputs sized once for the bucket's largest value, so
// later values in the bucket reuse them (the arena's layout at a smaller value fits in practice;
// if one did not, the arena would grow, as without buckets).
void CudaPlan::reserve_for_bucket(const DynMap& dyn) {
  reserved_for_bucket = true;
  DynMap at_max = dyn;
  at_max[reserve_dim_name] = reserve_max;
  const std::vector<size_t> bytes = buffer_sizes(at_max);
  const ArenaLayout layout = plan_arena(arena_requests(bytes));
  if (!arena || arena->capacity < layout.total)
    arena = device_alloc(dev, layout.total, "the intermediate arena");
  for (int b : output_buffers) {
    OutputSlot& o = outputs[size_t(b)];
    if (o.external == 0 && (!o.alloc || o.alloc->capacity < bytes[size_t(b)]))
      o.alloc = device_alloc(dev, bytes[size_t(b)],
                             fmt::format("output (node {})", plan.buffers[size_t(b)].node));
  }
}

// Each buffer's arena request: its bytes (intermediates only) and the steps it must stay apart
// from.
std::vector<ArenaRequest> CudaPlan::arena_requests(const std::vector<size_t>& bytes) const {
  const size_t nb = plan.buffers.size();
  std::vector<ArenaRequest> reqs(nb);
  std::vector<bool> used(nb, false);
  auto touch = [&](int b, int step) {
    ArenaRequest& r = reqs[size_t(b)];
    if (!used[size_t(b)]) r.first = r.last = step;
    r.first = std::min(r.first, step);
    r.last = std::max(r.last, step);
    used[size_t(b)] = true;
  };
  for_each_buffer_use(plan, touch);
  if (graph_branches > 1) {
    // A step may run beside every step since its latest producer: what it writes must not share
    // memory with what those use (compiler::earliest_start).
    const std::vector<compiler::StepBuffers> bufs = step_buffers(plan);
    const std::vector<int> earliest = compiler::earliest_start(bufs);
    for (size_t s = 0; s < bufs.size(); ++s)
      for (int b : bufs[s].writes)
        reqs[size_t(b)].first = std::min(reqs[size_t(b)].first, earliest[s]);
  }
  if (graph_branches == 1) {
    // A GEMV may run at the place of an earlier one of the same A (fuse_gemv_ops): its output must
    // not share memory with what the steps in between use (Llama's q projection output, dead after
    // its RoPE step, would otherwise be the k projection's place and keep q out of the group).
    for (const auto& [step, head] : gemv_group_heads_of) {
      const int c = std::get<compiler::MatmulStep>(plan.steps[size_t(step)]).c;
      reqs[size_t(c)].first = std::min(reqs[size_t(c)].first, head);
    }
    // Likewise an Add's output written by the GEMV before it.
    for (const GemvResidual& f : gemv_residual_fusions)
      reqs[size_t(f.out)].first = std::min(reqs[size_t(f.out)].first, f.matmul_step);
  }
  for (size_t b = 0; b < nb; ++b) {
    const bool intermediate = plan.buffers[b].kind == compiler::PlanBuffer::Kind::Intermediate;
    reqs[b].bytes = intermediate && used[b] ? bytes[b] : 0;
  }
  return reqs;
}

// Gives every plan buffer its device address: inputs where they are bound, outputs in owned
// blocks, intermediates in the arena (memory reused between buffers with disjoint lifetimes).
std::vector<CUdeviceptr> CudaPlan::place_buffers(const std::vector<size_t>& bytes) {
  const size_t nb = plan.buffers.size();
  const ArenaLayout layout = plan_arena(arena_requests(bytes));
  if (!arena || arena->capacity < layout.total) {
    arena.reset();
    arena = device_alloc(dev, layout.total, "the intermediate arena");
  }
  arena_bytes = layout.total;

  std::vector<CUdeviceptr> ptrs(nb, 0);
  for (size_t b = 0; b < nb; ++b) {
    const compiler::PlanBuffer& pb = plan.buffers[b];
    switch (pb.kind) {
      case compiler::PlanBuffer::Kind::Input:
        ptrs[b] = slot(pb.node).ptr();
        break;
      case compiler::PlanBuffer::Kind::Intermediate:
        ptrs[b] = arena->ptr + layout.offsets[b];
        break;
      case compiler::PlanBuffer::Kind::Output: {
        OutputSlot& o = outputs[b];
        if (o.external != 0) {
          if (o.external_bytes != bytes[b])
            throw std::runtime_error(fmt::format(
                "[execute] output {} is bound to {} bytes of external memory, the result at these "
                "dims has {} (set_output_ptr again)",
                node_label(pb.node), o.external_bytes, bytes[b]));
          o.bytes = bytes[b];
          ptrs[b] = o.external;
          break;
        }
        if (!o.alloc || o.alloc->capacity < bytes[b] || o.alloc.use_count() > 1)
          o.alloc = device_alloc(dev, bytes[b], fmt::format("output (node {})", pb.node));
        o.bytes = bytes[b];
        ptrs[b] = o.alloc->ptr;
        break;
      }
    }
  }
  return ptrs;
}

std::optional<Launch> kernel_launch(const compiler::KernelStep& k, CUfunction fn,
                                    const StepContext& c) {
  const int64_t threads = eval_checked(k.threads, c.dyn, "threads of " + c.label);
  if (threads == 0) return std::nullopt;  // nothing to compute at these dims
  const int64_t blocks = (threads + k.block - 1) / k.block;
  if (blocks > 0x7fffffff)
    throw std::runtime_error(
        fmt::format("[execute] {}: {} blocks exceed the grid limit", c.label, blocks));
  Launch l;
  l.fn = fn;
  l.grid[0] = unsigned(blocks);
  l.block[0] = k.block;
  l.shared = k.shared_bytes;
  for (const compiler::KernelArg& a : k.args) {
    switch (a.kind) {
      case compiler::KernelArg::Kind::Buffer:
        l.values.push_back(c.ptrs[size_t(a.buffer)]);
        break;
      case compiler::KernelArg::Kind::ErrorFlag:
        l.values.push_back(c.error_flag);
        break;
      case compiler::KernelArg::Kind::Dim: {
        auto it = c.dyn.find(a.sym);
        if (it == c.dyn.end())
          throw std::runtime_error(
              fmt::format("[execute] {} needs dynamic dim '{}'", c.label, a.sym));
        l.values.push_back(static_cast<unsigned long long>(it->second));
        break;
      }
    }
  }
  return l;
}

std::unique_ptr<MatmulCall> matmul_call(const compiler::MatmulStep& m, CublasLt& blas,
                                        const StepContext& c) {
  MatmulShape s;
  s.dtype = m.dtype;
  s.batch = m.batch.eval(c.dyn);
  s.m = m.m.eval(c.dyn);
  s.n = m.n.eval(c.dyn);
  s.k = m.k.eval(c.dyn);
  s.a_row = m.a_row.eval(c.dyn);
  s.a_col = m.a_col.eval(c.dyn);
  s.a_batch = m.a_batch.eval(c.dyn);
  s.b_row = m.b_row.eval(c.dyn);
  s.b_col = m.b_col.eval(c.dyn);
  s.b_batch = m.b_batch.eval(c.dyn);
  s.bias = m.bias >= 0;
  s.algo = m.algo;
  s.split_k = m.split_k;
  s.relu = m.relu;
  const size_t es = dtype_size(m.dtype);
  MatmulPointers p;
  p.a = c.ptrs[size_t(m.a)] + CUdeviceptr(m.a_offset.eval(c.dyn)) * es;
  p.b = c.ptrs[size_t(m.b)] + CUdeviceptr(m.b_offset.eval(c.dyn)) * es;
  p.c = c.ptrs[size_t(m.c)];
  p.bias = s.bias ? c.ptrs[size_t(m.bias)] : 0;
  return std::make_unique<MatmulCall>(blas, s, p);
}

bool launches_work(const Op& op) {
  return op.launch || (op.matmul && op.matmul->launches()) ||
         std::any_of(op.sub.begin(), op.sub.end(), launches_work);
}

void point_params_at_values(Op& op) {
  if (op.launch) {
    op.launch->params.clear();
    for (unsigned long long& v : op.launch->values) op.launch->params.push_back(&v);
  }
  for (Op& sub : op.sub) point_params_at_values(sub);
}

void CudaPlan::build_ops(const DynMap& dyn, const std::vector<CUdeviceptr>& ptrs) {
  ops.clear();
  ops.resize(plan.steps.size());
  for (std::unique_ptr<Fp8Step>& f : fp8_steps)
    if (f) f->active = false;
  fp8_declined = 0;
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    Op& op = ops[i];
    op.label = &labels[i];
    const StepContext c{dyn, dev.sm_count, ptrs, error_flag->ptr, labels[i]};
    if (const auto* k = std::get_if<compiler::KernelStep>(&plan.steps[i])) {
      op.launch = kernel_launch(*k, step_kernels[i].fn, c);
    } else if (const auto* m = std::get_if<compiler::MatmulStep>(&plan.steps[i])) {
      op.launch = gemv_launch(*m, step_kernels[i].fn, c, gemv_forced_splits);  // few rows
      if (!op.launch) {
        if (std::optional<Op> fp8 = fp8_op(i, *m, c)) {
          op = std::move(*fp8);
          op.label = &labels[i];
        } else {
          op.matmul = matmul_call(*m, *blas, c);
        }
      }
    } else {
      op = custom_op(i, std::get<compiler::CustomStep>(plan.steps[i]), dyn, ptrs);
      op.label = &labels[i];
    }
    point_params_at_values(op);  // the values are final now
  }
}

void CudaPlan::fuse_gemv_ops() {
  std::vector<bool> is_gemv(ops.size(), false);
  for (size_t i = 0; i < ops.size(); ++i)
    is_gemv[i] = ops[i].launch && std::holds_alternative<compiler::MatmulStep>(plan.steps[i]);
  std::vector<compiler::StepAccess> acc = step_accesses();
  gemv_launches_saved =
      fuse_gemv_residuals(ops, gemv_residual_fusions, acc, buffer_ptrs, buffer_bytes);
  if (!gemv_group_fns.empty())
    gemv_launches_saved += group_gemvs(ops, is_gemv, std::move(acc), gemv_group_fns);
  for (Op& op : ops) point_params_at_values(op);  // the fused launches' values are new
}

void CudaPlan::run_op(Op& op, CUstream s, bool sync_each) {
  const Driver& d = drv();
  if (op.launch) {
    Launch& l = *op.launch;
    CUresult r = d.cuLaunchKernel(l.fn, l.grid[0], l.grid[1], l.grid[2], l.block[0], l.block[1],
                                  l.block[2], l.shared, s, l.params.data(), nullptr);
    if (r != CUDA_SUCCESS) [[unlikely]]
      throw_cuda_error(r, "cuLaunchKernel", *op.label);
  } else if (op.matmul) {
    op.matmul->run(s);
  }
  for (Op& sub : op.sub) run_op(sub, s, false);
  if (sync_each) {
    CUresult r = d.cuStreamSynchronize(s);
    if (r != CUDA_SUCCESS) throw_cuda_error(r, "cuStreamSynchronize", "after " + *op.label);
  }
}

void CudaPlan::run_ops(CUstream s, bool sync_each) {
  for (Op& op : ops) run_op(op, s, sync_each);
}

void CudaPlan::launch_plan() {
  if (!graph_exec) {
    upload_staged();
    run_ops(stream, false);
  } else if (!graph_has_staged_copy) {
    upload_staged();
    CHECK_CUDA(drv().cuGraphLaunch(graph_exec.get(), stream));
  } else {  // opts.staged_in_graph: the graph's first node is the staged copy
    const Driver& d = drv();
    CHECK_CUDA(d.cuGraphLaunch(graph_exec.get(), stream));
    CHECK_CUDA(d.cuEventRecord(staged_done.get(), stream));
    staged_pending = true;
  }
}

void CudaPlan::capture_graph() {
  graph_has_staged_copy = false;
  if (!std::any_of(ops.begin(), ops.end(),
                   launches_work)) {  // an empty graph: launch nothing at all
    graph_exec.reset();
    return;
  }
  const Driver& d = drv();
  const bool copy_inside = staged_in_graph && staged_layout.total() > 0;
  // Captured on the runtime's own stream even when work runs on the caller's: capture records
  // without executing, and the caller's stream may be the (uncapturable) legacy default stream.
  const CUstream cs = own_stream;
  CHECK_CUDA(d.cuStreamBeginCapture_v2(cs, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
  CUgraph raw = nullptr;
  try {
    if (copy_inside)
      CHECK_CUDA(
          d.cuMemcpyHtoDAsync_v2(staged_dev->ptr, staged_host.data(), staged_layout.total(), cs));
    capture_ops(cs);
  } catch (...) {
    d.cuStreamEndCapture(cs, &raw);  // leave capture mode; the partial graph is discarded
    if (raw != nullptr) d.cuGraphDestroy(raw);
    throw;
  }
  CHECK_CUDA(d.cuStreamEndCapture(cs, &raw));
  GraphHandle graph_owner(raw);
  if (graph_exec) {
    // Same topology with new pointers or dims: patch the executable graph in place.
    CUgraphExecUpdateResultInfo info{};
    if (d.cuGraphExecUpdate_v2(graph_exec.get(), raw, &info) == CUDA_SUCCESS) {
      graph_has_staged_copy = copy_inside;
      return;
    }
    graph_exec.reset();
  }
  CUgraphExec exec = nullptr;
  // Prioritized branches: the kernel nodes keep their capturing streams' priorities (copied at
  // capture), used only with this flag.
  CHECK_CUDA(d.cuGraphInstantiateWithFlags(
      &exec, raw, last_capture_prioritized ? CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY : 0));
  graph_exec.reset(exec);
  graph_has_staged_copy = copy_inside;
}

void CudaPlan::poison_buffers() {
  const Driver& d = drv();
  for (int b : output_buffers) {
    const OutputSlot& o = outputs[size_t(b)];
    if (o.external != 0)
      CHECK_CUDA(d.cuMemsetD8Async(o.external, 0xFF, o.external_bytes, stream));
    else if (o.alloc)
      CHECK_CUDA(d.cuMemsetD8Async(o.alloc->ptr, 0xFF, o.alloc->capacity, stream));
  }
  if (arena) CHECK_CUDA(d.cuMemsetD8Async(arena->ptr, 0xFF, arena->capacity, stream));
  for (const auto& a : custom_arenas)
    if (a) CHECK_CUDA(d.cuMemsetD8Async(a->ptr, 0xFF, a->capacity, stream));
}

}  // namespace luminal::cuda
