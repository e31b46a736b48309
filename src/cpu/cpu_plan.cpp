// CpuPlan: building (lower, host source, native module, matmul primitives) and running.
#include "cpu/cpu_plan.h"

#include <omp.h>
#include <sys/mman.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

#include <fmt/format.h>

#include "luminal/custom_op.h"

namespace luminal::cpu {

namespace {

// Work items below this many elements read run on the calling thread: a parallel region costs a
// few microseconds, more than the loop itself.
constexpr int64_t kParallelWork = 1 << 15;

// The deleter of memory this backend allocated (set_buffer recognizes its own buffers by it).
struct HostFree {
  void operator()(std::byte* p) const { std::free(p); }
};

// Buffers from 4 MiB up are 2 MiB-aligned and asked for transparent huge pages: a random row
// gather from a large table otherwise misses the TLB as well as the cache on every lookup.
constexpr size_t kHugePage = size_t(2) << 20;

std::shared_ptr<std::byte> allocate(size_t bytes) {
  const size_t align = bytes >= 2 * kHugePage ? kHugePage : 64;
  const size_t rounded = std::max<size_t>(64, (bytes + align - 1) / align * align);
  auto* p = static_cast<std::byte*>(std::aligned_alloc(align, rounded));
  if (p == nullptr) throw std::bad_alloc();
  if (align == kHugePage) madvise(p, rounded, MADV_HUGEPAGE);  // advice: failure changes nothing
  return std::shared_ptr<std::byte>(p, HostFree{});
}

std::vector<std::byte> copy_of(const HostData& d, size_t bytes) {
  const std::byte* p = d.mem.get();
  return std::vector<std::byte>(p, p + std::min(bytes, d.bytes));
}

}  // namespace

CpuPlan::CpuPlan(const CpuOptions& options, const DeviceCaps& caps, const BuildRequest& request)
    : graph_(request.graph), opts_(options), caps_(caps), plan_dims_(request.dim_hints) {
  if (request.precision == Precision::FP8)  // no FP8 arithmetic on x86; never a silent bf16
    throw std::invalid_argument(
        "[cpu] precision fp8 needs FP8 tensor cores (a CUDA GPU, sm_89+); on the CPU use int8 "
        "(AMX / VNNI int8 GEMMs) or bf16");
  packs_ = std::make_unique<WeightPacks>(options.packed_weight_bytes);
  compiler::LowerOptions lo;
  lo.dim_hints = request.dim_hints;
  lo.choices = request.choices;
  lo.cublaslt_min_flops = 1 << 14;  // oneDNN beats a generated loop from tiny matmuls up
  lo.library_algos = false;         // cuBLASLt's algorithm list and the GEMV kernel are CUDA's
  plan_ = compiler::lower(graph_, lo);
  source_ = host_source(graph_, plan_);
  if (!source_.entries.empty()) module_ = HostModule::get(source_.text, opts_.compiler, opts_.flags);
  kernels_.resize(plan_.steps.size());
  matmuls_.resize(plan_.steps.size());
  for (const HostEntry& e : source_.entries) {
    KernelRun& r = kernels_[e.step];
    r.fn = reinterpret_cast<Entry>(module_->symbol(e.symbol));
    r.entry = &e;
    const compiler::KernelSpec& spec = std::get<compiler::KernelStep>(plan_.steps[e.step]).spec;
    if (spec.kind == compiler::KernelSpec::Kind::Reduce ||
        spec.kind == compiler::KernelSpec::Kind::OnlineSoftmax) {
      const Node& n = graph_.node(spec.kind == compiler::KernelSpec::Kind::Reduce ? spec.node : spec.other);
      r.work_per_item = n.inputs.at(0).view.dims.at(size_t(n.axis));
    }
  }
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    if (const auto* m = std::get_if<compiler::MatmulStep>(&plan_.steps[s])) {
      const DType bias = m->bias >= 0 ? plan_.buffers.at(size_t(m->bias)).dtype : m->dtype;
      matmuls_[s] = std::make_unique<HostMatmul>(
          *m, bias, packs_.get(), HostMatmul::Layout::timed,
          request.precision == Precision::Int8 ? HostMatmul::Int8::timed : HostMatmul::Int8::off);
    }
  }
  inputs_.resize(graph_.size());
  owned_.resize(plan_.buffers.size());
}

int CpuPlan::buffer_of(NodeId node) const {
  if (node >= graph_.size()) throw std::out_of_range(fmt::format("[cpu] node {} is not in the graph", node));
  return node < plan_.buffer_of_node.size() ? plan_.buffer_of_node[node] : -1;
}

void CpuPlan::check_input(NodeId input, const char* op) const {
  if (input >= graph_.size() || graph_.node(input).kind != OpKind::Input)
    throw std::invalid_argument(fmt::format("[{}] node {} is not an input", op, input));
}

void CpuPlan::upload(NodeId input, std::span<const std::byte> bytes, bool persist) {
  check_input(input, "upload");
  HostData& d = inputs_[input];
  if (d.external || !d.mem || d.bytes != bytes.size() || d.mem.use_count() > 1) d.mem = allocate(bytes.size());
  if (!bytes.empty()) std::memcpy(d.mem.get(), bytes.data(), bytes.size());
  d.bytes = bytes.size();
  d.persist = persist;
  d.external = false;
  d.version = persist ? next_input_version() : 0;
}

void CpuPlan::set_device_ptr(NodeId input, void* ptr, size_t bytes) {
  check_input(input, "set_device_ptr");
  if (ptr == nullptr && bytes > 0) throw std::invalid_argument("[set_device_ptr] null pointer");
  // Host memory is this device's memory: the caller's buffer is read in place.
  inputs_[input] = HostData{std::shared_ptr<std::byte>(static_cast<std::byte*>(ptr), [](std::byte*) {}),
                            bytes, true, true};
}

void CpuPlan::set_output_ptr(NodeId output, void* ptr, size_t bytes) {
  const int b = buffer_of(output);
  if (graph_.node(output).kind != OpKind::Output || b < 0)
    throw std::invalid_argument(fmt::format("[set_output_ptr] node {} is not an output", output));
  if (ptr == nullptr) {
    owned_[size_t(b)] = {};
    return;
  }
  owned_[size_t(b)] = HostData{std::shared_ptr<std::byte>(static_cast<std::byte*>(ptr), [](std::byte*) {}),
                               bytes, true, true};
}

std::span<std::byte> CpuPlan::host_input(NodeId input, size_t bytes) {
  check_input(input, "host_input");
  HostData& d = inputs_[input];
  if (bytes == SIZE_MAX) {
    const auto n = product(graph_.node(input).shape).as_const();
    if (!n) throw std::invalid_argument("[host_input] a dynamic input needs its size in bytes");
    bytes = size_t(*n) * dtype_size(graph_.node(input).dtype);
  }
  if (d.external || !d.mem || d.bytes != bytes || d.mem.use_count() > 1) d.mem = allocate(bytes);
  d.bytes = bytes;
  d.persist = false;
  d.external = false;
  return {d.mem.get(), bytes};
}

bool CpuPlan::inputs_ready() const {
  for (const compiler::PlanBuffer& pb : plan_.buffers)
    if (pb.kind == compiler::PlanBuffer::Kind::Input && !inputs_[pb.node].mem) return false;
  return true;
}

void CpuPlan::bind_buffers(const DynMap& dyn) {
  // Sized for the reserved maxima too (a dim bucket's plan allocates once).
  DynMap reserved_sizing;
  if (!reserved_.empty()) {
    reserved_sizing = dyn;
    for (const auto& [k, v] : reserved_) reserved_sizing[k] = std::max(v, dyn.count(k) ? dyn.at(k) : v);
  }
  const DynMap& sizing = reserved_.empty() ? dyn : reserved_sizing;
  ptrs_.resize(plan_.buffers.size());
  versions_.assign(plan_.buffers.size(), 0);
  for (size_t b = 0; b < plan_.buffers.size(); ++b) {
    const compiler::PlanBuffer& pb = plan_.buffers[b];
    if (pb.kind == compiler::PlanBuffer::Kind::Input) {
      const HostData& d = inputs_[pb.node];
      if (!d.mem) throw std::invalid_argument(
          fmt::format("[execute] input '{}' has no data", graph_.node(pb.node).name));
      ptrs_[b] = d.mem.get();
      versions_[b] = d.version;
      continue;
    }
    const size_t bytes = size_t(std::max<int64_t>(pb.numel.eval(sizing), 0)) * dtype_size(pb.dtype);
    HostData& d = owned_[b];
    if (d.external) {
      if (d.bytes < bytes) throw std::invalid_argument(fmt::format(
          "[execute] output buffer of node {}: {} bytes given, {} needed", pb.node, d.bytes, bytes));
    } else if (!d.mem || d.bytes < bytes || d.mem.use_count() > 1) {
      d.mem = allocate(bytes);
      d.bytes = bytes;
    }
    ptrs_[b] = d.mem.get();
  }
}

void CpuPlan::run_kernel(const compiler::KernelStep& k, KernelRun& r, const DynMap& dyn) {
  const int64_t items = k.threads.eval(dyn);
  if (items <= 0) return;
  const HostEntry& e = *r.entry;
  std::vector<void*>& bufs = r.buffers;
  std::vector<long long>& dims = r.dims;
  bufs.resize(e.buffers.size());
  dims.resize(e.dims.size());
  for (size_t i = 0; i < e.buffers.size(); ++i) bufs[i] = ptrs_[size_t(e.buffers[i])];
  for (size_t i = 0; i < e.dims.size(); ++i) {
    const auto it = dyn.find(e.dims[i]);
    if (it == dyn.end()) throw std::invalid_argument(fmt::format("[execute] dynamic dim '{}' has no value", e.dims[i]));
    dims[i] = it->second;
  }
  const int threads = omp_get_max_threads();
  if (threads <= 1 || items < 2 || items * r.work_per_item.eval(dyn) < kParallelWork) {
    r.fn(bufs.data(), dims.data(), &error_, 0, items);
    return;
  }
  const int chunks = int(std::min<int64_t>(threads, items));
#pragma omp parallel for schedule(static, 1) num_threads(chunks)
  for (int c = 0; c < chunks; ++c)
    r.fn(bufs.data(), dims.data(), &error_, items * c / chunks, items * (c + 1) / chunks);
}

void CpuPlan::run_matmul(size_t step, const compiler::MatmulStep& m, const DynMap& dyn) {
  matmuls_[step]->run(dyn, ptrs_[size_t(m.a)], ptrs_[size_t(m.b)], ptrs_[size_t(m.c)],
                      m.bias >= 0 ? ptrs_[size_t(m.bias)] : nullptr, versions_[size_t(m.b)]);
}

void CpuPlan::execute(const DynMap& dyn, bool consume) {
  if (opts_.threads > 0) omp_set_num_threads(opts_.threads);
  bind_buffers(dyn);
  if (poison_) {
    for (size_t b = 0; b < owned_.size(); ++b)
      if (plan_.buffers[b].kind != compiler::PlanBuffer::Kind::Input) std::memset(ptrs_[b], 0xFF, owned_[b].bytes);
  }
  // The first run builds oneDNN's primitives and touches every buffer: profiles start after it.
  const bool profile = opts_.profile && ran_;
  ran_ = true;
  if (profile) {
    step_us_.resize(plan_.steps.size());
    ++profiled_runs_;
  }
  for (size_t s = 0; s < plan_.steps.size(); ++s) {
    const auto t0 = profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point{};
    if (const auto* k = std::get_if<compiler::KernelStep>(&plan_.steps[s])) {
      run_kernel(*k, kernels_[s], dyn);
    } else if (const auto* m = std::get_if<compiler::MatmulStep>(&plan_.steps[s])) {
      run_matmul(s, *m, dyn);
    } else {
      run_custom(s, std::get<compiler::CustomStep>(plan_.steps[s]), dyn);
    }
    if (profile)
      step_us_[s] += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }
  last_dyn_ = dyn;
  if (!consume) return;
  for (const compiler::PlanBuffer& pb : plan_.buffers) {  // consumed-input semantics
    HostData& d = inputs_[pb.node];
    if (pb.kind == compiler::PlanBuffer::Kind::Input && !d.persist && !d.external) d = {};
  }
}

void CpuPlan::check_errors() {
  const int flag = __atomic_exchange_n(&error_, 0, __ATOMIC_RELAXED);
  if (flag == 0) return;
  throw BadInputError(fmt::format(
      "[cpu] a kernel reported bad input: {} (indices were clamped; the results of that execute are invalid)",
      describe_error_bits(flag)));
}

std::vector<std::byte> CpuPlan::get_bytes(NodeId node) {
  check_errors();
  const Node& n = graph_.node(node);
  if (n.kind == OpKind::Input) {
    const HostData& d = inputs_[node];
    if (!d.mem) throw std::invalid_argument(fmt::format("[get_bytes] input '{}' has no data", n.name));
    return copy_of(d, d.bytes);
  }
  const int b = buffer_of(node);
  if (b < 0) throw std::invalid_argument(fmt::format("[get_bytes] node {} has no buffer (not a result)", node));
  const compiler::PlanBuffer& pb = plan_.buffers[size_t(b)];
  if (pb.kind == compiler::PlanBuffer::Kind::Input) return get_bytes(pb.node);
  const HostData& d = owned_[size_t(b)];
  if (!d.mem) throw std::invalid_argument(fmt::format("[get_bytes] node {} has not been computed", node));
  return copy_of(d, size_t(pb.numel.eval(last_dyn_)) * dtype_size(pb.dtype));
}

Buffer CpuPlan::remove_buffer(NodeId node) {
  check_errors();
  const bool input = graph_.node(node).kind == OpKind::Input;
  const int b = input ? -1 : buffer_of(node);
  if (!input && b < 0) throw std::invalid_argument(fmt::format("[remove_buffer] node {} has no buffer", node));
  HostData& d = input ? inputs_[node] : owned_[size_t(b)];
  if (!d.mem || d.external)
    throw std::invalid_argument(fmt::format("[remove_buffer] node {} has no buffer of its own", node));
  Buffer out;
  out.bytes = input ? d.bytes : size_t(plan_.buffers[size_t(b)].numel.eval(last_dyn_)) *
                                    dtype_size(plan_.buffers[size_t(b)].dtype);
  out.dtype = graph_.node(node).dtype;
  out.impl = std::move(d.mem);
  d = {};
  return out;
}

void CpuPlan::set_buffer(NodeId input, Buffer b) {
  check_input(input, "set_buffer");
  const Node& n = graph_.node(input);
  if (!b) throw std::invalid_argument(fmt::format("[set_buffer] empty buffer for input '{}'", n.name));
  if (b.dtype != n.dtype)
    throw std::invalid_argument(fmt::format("[set_buffer] tensor '{}' is {}, buffer is {}", n.name,
                                            dtype_name(n.dtype), dtype_name(b.dtype)));
  auto mem = std::static_pointer_cast<std::byte>(b.impl);
  if (std::get_deleter<HostFree>(mem) == nullptr)
    throw std::invalid_argument(fmt::format("[set_buffer] input '{}': not a CPU backend buffer", n.name));
  inputs_[input] = HostData{std::move(mem), b.bytes, n.persist, false, n.persist ? next_input_version() : 0};
}

BoundInput CpuPlan::take_input(NodeId input) {
  check_input(input, "take_input");
  if (!inputs_[input].mem) return {};
  auto moved = std::make_shared<HostData>(std::move(inputs_[input]));
  inputs_[input] = {};
  return BoundInput{std::move(moved)};
}

void CpuPlan::give_input(NodeId input, BoundInput b) {
  check_input(input, "give_input");
  if (b) inputs_[input] = std::move(*std::static_pointer_cast<HostData>(b.data));
}

double CpuPlan::time_us(const DynMap& dyn, int warmup, int trials) {
  for (int i = 0; i < warmup; ++i) execute(dyn, false);
  std::vector<double> us;
  for (int i = 0; i < std::max(trials, 1); ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    execute(dyn, false);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

std::vector<double> CpuPlan::execute_timed(const DynMap& dyn, int iterations) {
  std::vector<double> us;
  for (int i = 0; i < iterations; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    execute(dyn, true);
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
  }
  return us;
}

uint64_t CpuPlan::memory_bytes() const {
  uint64_t total = 0;
  for (const HostData& d : owned_) total += d.external ? 0 : d.bytes;
  return total + packs_->bytes();
}

void CpuPlan::reserve_dim(const std::string& dim, int64_t max) { reserved_[dim] = max; }

PlanStats CpuPlan::stats() const {
  PlanStats s;
  for (size_t i = 0; i < plan_.steps.size(); ++i) {
    if (const auto* k = std::get_if<compiler::KernelStep>(&plan_.steps[i])) {
      s.steps.push_back("kernel " + k->name + ": " + k->spec.summary);
    } else if (const auto* m = std::get_if<compiler::MatmulStep>(&plan_.steps[i])) {
      s.steps.push_back(fmt::format("matmul {} batch {} m {} n {} k {}{}{} ({})", dtype_name(m->dtype),
                                    m->batch.to_string(), m->m.to_string(), m->n.to_string(), m->k.to_string(),
                                    m->bias >= 0 ? " +bias" : "", m->relu ? " relu" : "",
                                    matmuls_[i]->implementation()));
    } else {
      // The host kernel or the decomposition is picked at the step's first run (it needs the dims).
      const bool ran = i < custom_.size() && custom_[i];
      const char* how = !ran ? " (not run yet)" : custom_has_kernel(i) ? " (host kernel)" : " (its decomposition)";
      s.steps.push_back("custom " + graph_.node(std::get<compiler::CustomStep>(plan_.steps[i]).node).custom->name() +
                        how);
    }
    if (profiled_runs_ > 0) s.steps.back() += fmt::format("  [{:.2f} us]", step_us_[i] / double(profiled_runs_));
  }
  s.kernels = s.steps.size();
  s.counters["threads"] = opts_.threads > 0 ? opts_.threads : omp_get_max_threads();
  s.counters["packed_weight_bytes"] = int64_t(packs_->bytes());
  return s;
}

}  // namespace luminal::cpu
