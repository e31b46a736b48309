// Capturing the plan as a CUDA graph with parallel branches: steps with no memory hazard between
// them (the DLRM bottom MLP and the embedding-bag kernel, say) are captured on different streams,
// so the graph runs them concurrently. Joins are event waits, which capture turns into edges.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>

#include "compiler/branches.h"
#include "cuda/runtime/cuda_plan.h"

namespace luminal::cuda {
namespace {

// Every cuBLASLt call uses the one workspace: a pseudo-range all matmuls write, which keeps them
// in order with each other (device addresses never reach it).
constexpr compiler::ByteRange kBlasWorkspace{~uint64_t{0} - 1, ~uint64_t{0}};

}  // namespace

std::vector<compiler::StepBuffers> step_buffers(const compiler::KernelPlan& plan) {
  std::vector<compiler::StepBuffers> out(plan.steps.size());
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    compiler::StepBuffers& a = out[i];
    if (const auto* k = std::get_if<compiler::KernelStep>(&plan.steps[i])) {
      a.reads = k->reads;
      a.writes = k->writes;
      // Buffer arguments not listed as written are read (conservative for anything unlisted).
      for (const compiler::KernelArg& arg : k->args)
        if (arg.kind == compiler::KernelArg::Kind::Buffer &&
            std::find(k->writes.begin(), k->writes.end(), arg.buffer) == k->writes.end())
          a.reads.push_back(arg.buffer);
    } else if (const auto* m = std::get_if<compiler::MatmulStep>(&plan.steps[i])) {
      for (int b : {m->a, m->b, m->bias})
        if (b >= 0) a.reads.push_back(b);
      a.writes = {m->c};
    } else {
      const auto& c = std::get<compiler::CustomStep>(plan.steps[i]);
      a.reads = c.inputs;
      a.writes = {c.output};  // its scratch arena is its own (custom_arenas[i])
    }
  }
  return out;
}

std::vector<compiler::StepAccess> CudaPlan::step_accesses() const {
  const std::vector<compiler::StepBuffers> bufs = step_buffers(plan);
  std::vector<compiler::StepAccess> acc(plan.steps.size());
  auto range = [&](int b) {
    const uint64_t p = buffer_ptrs[size_t(b)];
    return compiler::ByteRange{p, p + buffer_bytes[size_t(b)]};
  };
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    compiler::StepAccess& a = acc[i];
    a.launches = launches_work(ops[i]);
    for (int b : bufs[i].reads) a.reads.push_back(range(b));
    for (int b : bufs[i].writes) a.writes.push_back(range(b));
    if (std::holds_alternative<compiler::MatmulStep>(plan.steps[i]))
      a.writes.push_back(kBlasWorkspace);
  }
  return acc;
}

void CudaPlan::capture_ops(CUstream origin) {
  const Driver& d = drv();
  const int max_streams = std::max(1, graph_branches);
  last_capture_prioritized = false;
  if (max_streams == 1) {
    run_ops(origin, false);
    last_capture_streams = 1;
    return;
  }
  const std::vector<compiler::StepAccess> acc = step_accesses();
  const std::vector<compiler::BranchSlot> slots = compiler::schedule_branches(acc, max_streams);
  const int used = compiler::streams_used(slots, acc);
  last_capture_streams = std::max(used, 1);
  // Branch priorities: every chain on a stream of ours (the origin's priority is the caller's), the
  // lead chain on lead_stream at the highest priority, the others on branch streams, created at the
  // default priority, which is the lowest.
  const bool prioritized = opts.branch_priorities && used > 1;
  const int lead = prioritized ? compiler::lead_stream(slots, acc) : -1;
  last_capture_prioritized = prioritized;
  while (int(branch_streams.size()) + 1 < used) {
    CUstream s = nullptr;
    CHECK_CUDA(d.cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    branch_streams.emplace_back(s);
  }
  if (prioritized && !lead_stream) {
    int least = 0, greatest = 0;
    CHECK_CUDA(d.cuCtxGetStreamPriorityRange(&least, &greatest));
    CUstream s = nullptr;
    CHECK_CUDA(d.cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, greatest));
    lead_stream.reset(s);
  }
  while (step_events.size() < ops.size() + 1) {
    CUevent e = nullptr;
    CHECK_CUDA(d.cuEventCreate(&e, CU_EVENT_DISABLE_TIMING));
    step_events.emplace_back(e);
  }
  auto stream_of = [&](int s) {
    if (!prioritized) return s == 0 ? origin : branch_streams[size_t(s - 1)].get();
    return s == lead ? lead_stream.get() : branch_streams[size_t(s < lead ? s : s - 1)].get();
  };
  // A side stream joins the capture by waiting on an event of the capturing stream (recorded
  // after anything already captured there, e.g. the staged-input copy).
  CUevent start = step_events.back().get();
  CHECK_CUDA(d.cuEventRecord(start, origin));
  std::vector<bool> joined(size_t(used), false);
  if (!prioritized) joined[0] = true;  // stream 0 is the origin
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!acc[i].launches) continue;
    const int sid = slots[i].stream;
    CUstream s = stream_of(sid);
    if (!joined[size_t(sid)]) {
      CHECK_CUDA(d.cuStreamWaitEvent(s, start, 0));
      joined[size_t(sid)] = true;
    }
    for (int w : slots[i].waits) CHECK_CUDA(d.cuStreamWaitEvent(s, step_events[size_t(w)].get(), 0));
    run_op(ops[i], s, false);
    CHECK_CUDA(d.cuEventRecord(step_events[i].get(), s));
  }
  // Capture ends on the origin stream only once every side stream has joined back into it.
  for (int sid = prioritized ? 0 : 1; sid < used; ++sid) {
    if (!joined[size_t(sid)]) continue;
    CUstream s = stream_of(sid);
    CHECK_CUDA(d.cuEventRecord(start, s));
    CHECK_CUDA(d.cuStreamWaitEvent(origin, start, 0));
  }
}

}  // namespace luminal::cuda
