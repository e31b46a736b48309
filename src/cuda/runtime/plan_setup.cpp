// Setting up a CudaPlan: lowering, plan checks, symbols and labels, kernel compilation.
#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string_view>

#include "cuda/codegen/kernels.h"
#include "cuda/runtime/gemv.h"
#include "cuda/runtime/jit_cache.h"
#include "cuda/runtime/cuda_plan.h"
#include "luminal/custom_op.h"

namespace luminal::cuda {
namespace {

template <class... F>
struct Overloaded : F... {
  using F::operator()...;
};

[[noreturn]] void bad_plan(const std::string& why) {
  throw std::logic_error("[cuda] invalid kernel plan: " + why);
}

std::string matmul_label(const compiler::MatmulStep& m) {
  auto s = [](const Expr& e) {
    return e.as_const() ? std::to_string(*e.as_const()) : e.to_string();
  };
  std::string dims = fmt::format("{}x{}x{}", s(m.m), s(m.n), s(m.k));
  if (!(m.batch.as_const() && *m.batch.as_const() == 1)) dims = s(m.batch) + "x" + dims;
  return fmt::format(
      "cublasLt matmul {}{}{}{}{}", dims, m.bias >= 0 ? " +bias" : "", m.relu ? " relu" : "",
      m.split_k > 1 ? fmt::format(" split-k {}", m.split_k) : "",
      m.gemv_max_m > 0 ? fmt::format(" (GEMV kernel at m <= {})", m.gemv_max_m) : "");
}

}  // namespace

void for_each_buffer_use(const KernelPlan& plan, const std::function<void(int, int)>& f) {
  const std::vector<compiler::StepBuffers> steps = step_buffers(plan);
  for (size_t i = 0; i < steps.size(); ++i) {
    for (int b : steps[i].reads) f(b, int(i));
    for (int b : steps[i].writes) f(b, int(i));
  }
}

CudaPlan::CudaPlan(const CudaOptions& o, const DeviceInfo& d, const BuildRequest& request)
    : graph_(request.graph),
      opts(o),
      dim_hints(request.dim_hints),
      precision(request.precision),
      dev(d),
      caps(device_caps(d)) {
  const Graph& g = graph_;
  dev.make_current();
  if (precision == Precision::FP8 && dev.cc_major * 10 + dev.cc_minor < 89)
    throw std::runtime_error(fmt::format(
        "[cuda] precision fp8 needs FP8 tensor cores (sm_89+); {} is sm_{}{}", dev.name,
        dev.cc_major, dev.cc_minor));
  compiler::LowerOptions lower_opts;
  lower_opts.dim_hints = dim_hints;
  lower_opts.choices = request.choices;
  plan = codegen::lower_and_render(g, lower_opts);  // the plan as data, then its sources
  validate_plan();
  target = nvrtc_target(dev.cc_major, dev.cc_minor);
  CUstream s = nullptr;
  CHECK_CUDA(drv().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
  stream_owner.reset(s);
  own_stream = stream = s;
  error_flag = device_alloc(dev, sizeof(int), "the kernel error flag");
  CHECK_CUDA(drv().cuMemsetD8Async(error_flag->ptr, 0, sizeof(int), stream));
  flag_host = PinnedBuffer(256);
  poison = opts.poison;
  staged_in_graph = opts.staged_in_graph;
  graph_branches = opts.graph_branches;
  inputs.resize(g.size());
  outputs.resize(plan.buffers.size());
  collect_plan_info();
  init_staged();
  const bool has_matmul = std::any_of(
      plan.steps.begin(), plan.steps.end(),
      [](const compiler::Step& st) { return std::holds_alternative<compiler::MatmulStep>(st); });
  if (has_matmul)
    blas =
        std::make_unique<CublasLt>(dev, target, fp32_math(precision), opts.matmul_autotune);
  compile_kernels();
  sync_stream();
}

void CudaPlan::validate_plan() const {
  const int nb = int(plan.buffers.size());
  auto check = [&](int b, std::string_view what) {
    if (b < 0 || b >= nb) bad_plan(fmt::format("{} refers to buffer {} of {}", what, b, nb));
  };
  for (const compiler::PlanBuffer& pb : plan.buffers) {
    if (pb.node >= graph_.size())
      bad_plan(fmt::format("buffer of node {} beyond the graph", pb.node));
    const OpKind k = graph_.node(pb.node).kind;
    if (pb.kind == compiler::PlanBuffer::Kind::Input && k != OpKind::Input)
      bad_plan(fmt::format("input buffer of node {} ({})", pb.node, op_name(k)));
    if (pb.kind == compiler::PlanBuffer::Kind::Output && k != OpKind::Output)
      bad_plan(fmt::format("output buffer of node {} ({})", pb.node, op_name(k)));
  }
  for (NodeId id : graph_.outputs()) {
    if (graph_.node(id).writes_into >= 0) continue;  // a state's next value: the input's buffer
    const int b = id < plan.buffer_of_node.size() ? plan.buffer_of_node[id] : -1;
    if (b < 0 || b >= nb || plan.buffers[size_t(b)].kind != compiler::PlanBuffer::Kind::Output)
      bad_plan(fmt::format("output node {} has no output buffer", id));
  }
  for (const compiler::Step& st : plan.steps) {
    std::visit(
        Overloaded{
            [&](const compiler::KernelStep& k) {
              if (k.block == 0 || k.block > 1024)
                bad_plan(fmt::format("{}: block size {}", k.name, k.block));
              for (const compiler::KernelArg& a : k.args)
                if (a.kind == compiler::KernelArg::Kind::Buffer) check(a.buffer, k.name);
              for (int b : k.reads) check(b, k.name);
              for (int b : k.writes) check(b, k.name);
            },
            [&](const compiler::MatmulStep& m) {
              check(m.a, "matmul A");
              check(m.b, "matmul B");
              check(m.c, "matmul C");
              if (m.bias >= 0) check(m.bias, "matmul bias");
            },
            [&](const compiler::CustomStep& c) {
              if (c.node >= graph_.size() || !graph_.node(c.node).custom)
                bad_plan("custom step without a custom op");
              if (c.inputs.size() != graph_.node(c.node).inputs.size())
                bad_plan(fmt::format("custom step of node {}: {} input buffers for {} inputs",
                                     c.node, c.inputs.size(), graph_.node(c.node).inputs.size()));
              for (int b : c.inputs) check(b, "custom input");
              if (c.input_offsets.size() != c.inputs.size())
                bad_plan(fmt::format("custom step of node {}: {} input offsets for {} inputs",
                                     c.node, c.input_offsets.size(), c.inputs.size()));
              check(c.output, "custom output");
            },
        },
        st);
  }
}

// Symbols, inputs, outputs and host_ops labels: everything execute() needs without a graph walk.
void CudaPlan::collect_plan_info() {
  std::set<std::string> syms(plan.symbols.begin(), plan.symbols.end());
  auto add = [&](const Expr& e) {
    for (std::string& s : e.symbols()) syms.insert(std::move(s));
  };
  for (NodeId id = 0; id < graph_.size(); ++id) {
    if (graph_.node(id).kind == OpKind::Input) input_nodes.push_back(id);
  }
  buffer_used.assign(plan.buffers.size(), false);
  for_each_buffer_use(plan, [&](int b, int) { buffer_used[size_t(b)] = true; });
  for (size_t b = 0; b < plan.buffers.size(); ++b) {
    const compiler::PlanBuffer& pb = plan.buffers[b];
    // Buffers no step touches (inputs of dead code) need neither data nor dims, as in the
    // reference runtime, which skips dead nodes.
    if (!buffer_used[b] && pb.kind != compiler::PlanBuffer::Kind::Output) continue;
    add(pb.numel);
    if (pb.kind == compiler::PlanBuffer::Kind::Input) plan_inputs.push_back(pb.node);
    if (pb.kind == compiler::PlanBuffer::Kind::Output) output_buffers.push_back(int(b));
  }
  std::sort(plan_inputs.begin(), plan_inputs.end());
  plan_inputs.erase(std::unique(plan_inputs.begin(), plan_inputs.end()), plan_inputs.end());
  for (const compiler::Step& st : plan.steps) {
    std::visit(
        Overloaded{
            [&](const compiler::KernelStep& k) {
              add(k.threads);
              for (const compiler::KernelArg& a : k.args)
                if (a.kind == compiler::KernelArg::Kind::Dim) syms.insert(a.sym);
              labels.push_back("kernel " + k.name);
            },
            [&](const compiler::MatmulStep& m) {
              for (const Expr* e : {&m.batch, &m.m, &m.n, &m.k, &m.a_offset, &m.a_row, &m.a_col,
                                    &m.a_batch, &m.b_offset, &m.b_row, &m.b_col, &m.b_batch})
                add(*e);
              labels.push_back(matmul_label(m));
            },
            [&](const compiler::CustomStep& c) {
              for (const NodeInput& in : graph_.node(c.node).inputs)
                for (const Expr& d : in.view.dims) add(d);
              for (const Expr& o : c.input_offsets) add(o);
              labels.push_back("custom " + graph_.node(c.node).custom->name());
            },
        },
        st);
  }
  symbols.assign(syms.begin(), syms.end());
}

namespace {

// The loaded module of `source` on device `ordinal` (its primary context), shared by every plan of
// the process that is alive: a search's candidates and the plans of dim buckets load each kernel
// once instead of once per plan.
std::shared_ptr<ModuleHandle> shared_module(int ordinal, const std::string& source,
                                            const std::function<CUmodule()>& load) {
  static std::mutex m;
  static std::map<std::pair<int, std::string>, std::weak_ptr<ModuleHandle>> loaded;
  std::lock_guard<std::mutex> lock(m);
  std::weak_ptr<ModuleHandle>& slot = loaded[{ordinal, source}];
  if (std::shared_ptr<ModuleHandle> alive = slot.lock()) return alive;
  auto fresh = std::make_shared<ModuleHandle>(load());
  slot = fresh;
  return fresh;
}

}  // namespace

LoadedKernel CudaPlan::load_kernel(const std::string& source, const std::string& entry,
                                            unsigned shared) {
  const std::string what = "kernel " + entry;
  auto it = modules.find(source);
  if (it == modules.end()) {
    auto module = shared_module(dev.ordinal, source, [&] {
      const DeviceImage img = JitCache::global().get(source, entry, target);
      CUmodule mod = nullptr;
      CHECK_CUDA_CTX(drv().cuModuleLoadData(&mod, img.bytes.data()), what);
      return mod;
    });
    it = modules.emplace(source, std::move(module)).first;
  }
  LoadedKernel k;
  CHECK_CUDA_CTX(drv().cuModuleGetFunction(&k.fn, it->second->get(), entry.c_str()), what);
  k.shared = shared;
  if (shared > 48 * 1024)  // above the default limit a kernel must opt in
    CHECK_CUDA_CTX(drv().cuFuncSetAttribute(k.fn, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            int(shared)),
                   what);
  return k;
}

void CudaPlan::compile_kernels() {
  const bool gemv_off = !opts.gemv.enabled;
  const int gemv_loads = opts.gemv.loads;
  gemv_forced_splits = opts.gemv.splits;
  const bool gemv_group = opts.gemv.group;
  const bool gemv_residual = opts.gemv.residual;
  step_kernels.assign(plan.steps.size(), LoadedKernel{});
  for (size_t i = 0; i < plan.steps.size(); ++i) {
    if (const auto* k = std::get_if<compiler::KernelStep>(&plan.steps[i]))
      step_kernels[i] = load_kernel(k->source, k->name, k->shared_bytes);
    // A matmul's GEMV kernel (for m <= gemv_max_m); gemv.enabled = false keeps cuBLASLt.
    const auto* m = std::get_if<compiler::MatmulStep>(&plan.steps[i]);
    if (m != nullptr && m->gemv_max_m > 0 && !gemv_off) {
      const std::string src = gemv_source(m->dtype, gemv_loads);
      step_kernels[i] = load_kernel(src, gemv_entry(m->dtype), 0);
      if (gemv_group)  // off: every GEMV launches on its own
        gemv_group_fns[step_kernels[i].fn] = load_kernel(src, gemv_group_entry(m->dtype), 0).fn;
    }
  }
  // What fuse_gemv_ops may do, known from the plan alone; gemv.residual off leaves every residual
  // Add to its own kernel.
  gemv_group_heads_of.clear();
  if (!gemv_group_fns.empty()) gemv_group_heads_of = gemv_group_heads(plan);
  gemv_residual_fusions.clear();
  if (!gemv_off && gemv_residual) gemv_residual_fusions = gemv_residuals(graph_, plan);
}

}  // namespace luminal::cuda
