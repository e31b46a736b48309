// Executable: a graph compiled for a backend. Binding and reading go to the running plan through
// its node map; dim buckets switch plans; what the caller registered follows every switch. The
// search itself lives in plan_search.cpp.
#include <fmt/format.h>

#include <stdexcept>
#include <utility>

#include "compiler/executable_state.h"

namespace luminal {

namespace {

// True when some node's shape uses the dynamic dim `dim`.
bool graph_uses_dim(const Graph& g, const std::string& dim) {
  for (NodeId n = 0; n < g.size(); ++n)
    for (const Expr& e : g.node(n).shape)
      for (const std::string& s : e.symbols())
        if (s == dim) return true;
  return false;
}

// The search runs each candidate several times on the same inputs; a graph that writes its
// inputs (output_into) would see them change between runs, so it runs its default candidate.
bool has_states(const Graph& g) {
  for (NodeId o : g.outputs())
    if (g.node(o).writes_into >= 0) return true;
  return false;
}

NodeId mapped(const std::vector<NodeId>& remap, NodeId u) { return remap.empty() ? u : remap[u]; }

}  // namespace

void move_inputs(const Graph& user, PlanSlot& from, PlanSlot& to) {
  for (NodeId u = 0; u < user.size(); ++u) {
    if (user.node(u).kind != OpKind::Input) continue;
    BoundInput b = from.plan->take_input(mapped(from.remap, u));
    if (b) to.plan->give_input(mapped(to.remap, u), std::move(b));
  }
}

Executable::State::State(const Graph& g, Target b, CompileOptions o)
    : user(g), backend(std::move(b)), opts(std::move(o)), states(has_states(g)) {
  if (!backend) throw std::invalid_argument("[compile] no target backend");
  if (!opts.candidate.empty()) {
    if (!compiler::search::Candidate::parse(opts.candidate))
      throw std::invalid_argument(
          fmt::format("[search] malformed candidate '{}' (expected key=option,key=option,...)",
                      opts.candidate));
    if (states)
      throw std::invalid_argument(fmt::format(
          "[search] candidate '{}': this graph updates its inputs (output_into), so it runs its "
          "default plan only",
          opts.candidate));
  }
  const BucketOptions& bk = opts.buckets;
  if (bk.enabled()) {
    bk.validate();
    if (!graph_uses_dim(g, bk.dim))
      throw std::invalid_argument(
          fmt::format("[bucket] '{}' is not a dynamic dim of the graph", bk.dim));
  }
  expand_rules();
  const size_t n = bk.enabled() ? bk.ranges.size() : 1;
  slots.resize(n);
  for (size_t i = 0; i < n; ++i) {
    slots[i].hints = opts.dim_hints;
    if (!bk.enabled()) continue;
    slots[i].bucket = bk.ranges[i];
    slots[i].hints[bk.dim] = bk.ranges[i].max;
  }
  active = int(n) - 1;  // buckets: the one weights load into is the dim hint's, else the last
  if (auto it = opts.dim_hints.find(bk.dim); bk.enabled() && it != opts.dim_hints.end())
    if (const int i = find_bucket(bk.ranges, it->second); i >= 0) active = i;
  build({}, slot());
  built = 1;
}

NodeId Executable::State::node(NodeId user_node) const {
  return mapped(slot().remap, user_node);
}

void Executable::State::select_bucket(const DynMap& dyn) {
  const BucketOptions& b = opts.buckets;
  if (!b.enabled()) return;
  const auto it = dyn.find(b.dim);
  if (it == dyn.end())
    throw std::runtime_error(fmt::format(
        "[execute] dynamic dim '{}' has no value in the DynMap (the executable's buckets dispatch "
        "on it)",
        b.dim));
  const int i = find_bucket(b.ranges, it->second);
  if (i < 0)
    throw std::out_of_range(fmt::format("[execute] {} = {} is outside every bucket ({}..{})",
                                        b.dim, it->second, b.ranges.front().min,
                                        b.ranges.back().max));
  if (i == active) return;
  PlanSlot& next = slots[size_t(i)];
  if (!next.plan) {  // built before anything moves, so a failure leaves the running plan intact
    build({}, next);
    ++built;
  }
  move_inputs(user, slot(), next);
  active = i;
  reapply_registered();
}

void Executable::State::reapply_registered() {
  BackendPlan& p = *slot().plan;
  for (const auto& [u, pb] : output_ptrs) p.set_output_ptr(node(u), pb.first, pb.second);
  if (stream)
    p.set_stream(*stream);
  else
    p.use_own_stream();
}

// ---- Executable ----

Executable::Executable(const Graph& g, Target target, CompileOptions options)
    : Runtime(g), state_(std::make_unique<State>(g, std::move(target), std::move(options))) {}

Executable::~Executable() = default;

std::unique_ptr<Executable> compile(const Graph& g, Target target, CompileOptions options) {
  return std::make_unique<Executable>(g, std::move(target), std::move(options));
}

void Executable::upload(NodeId input, std::span<const std::byte> bytes, bool persist) {
  state_->slot().plan->upload(state_->node(input), bytes, persist);
}

bool Executable::load_items(const std::vector<LoadItem>& items, const LoadOptions& opts) {
  std::vector<LoadItem> mapped_items = items;
  for (LoadItem& it : mapped_items) it.node = state_->node(it.node);
  return state_->slot().plan->load_items(mapped_items, opts);
}

void Executable::set_device_ptr(const GraphTensor& t, void* ptr, size_t bytes) {
  const NodeId id = input_node(t, "set_device_ptr");
  state_->slot().plan->set_device_ptr(state_->node(id), ptr, bytes);
}

void Executable::execute(const DynMap& dyn) {
  State& s = *state_;
  if (s.opts.buckets.enabled()) s.select_bucket(dyn);
  if (!s.slot().searched) s.ensure_searched(dyn);
  s.slot().plan->execute(dyn, true);
}

std::vector<std::byte> Executable::get_bytes(const GraphTensor& t) {
  const NodeId id = result_node(t, "get");
  return state_->slot().plan->get_bytes(state_->node(id));
}

Buffer Executable::remove_buffer(const GraphTensor& t) {
  const NodeId id = result_node(t, "remove_buffer");
  return state_->slot().plan->remove_buffer(state_->node(id));
}

void Executable::set_buffer(const GraphTensor& t, Buffer b) {
  const NodeId id = input_node(t, "set_buffer");
  state_->slot().plan->set_buffer(state_->node(id), std::move(b));
}

std::vector<std::string> Executable::host_ops() const { return stats().steps; }

size_t Executable::kernel_count() const { return stats().kernels; }

void Executable::set_output_ptr(const GraphTensor& t, void* ptr, size_t bytes) {
  const NodeId id = result_node(t, "set_output_ptr");
  state_->slot().plan->set_output_ptr(state_->node(id), ptr, bytes);
  if (ptr == nullptr)
    state_->output_ptrs.erase(id);
  else
    state_->output_ptrs[id] = {ptr, bytes};
}

void Executable::set_stream(void* stream) {
  state_->slot().plan->set_stream(stream);
  state_->stream = stream;
}

void Executable::use_own_stream() {
  state_->slot().plan->use_own_stream();
  state_->stream.reset();
}

void Executable::synchronize() { state_->slot().plan->synchronize(); }

void Executable::check_errors() { state_->slot().plan->check_errors(); }

std::span<std::byte> Executable::host_input(const GraphTensor& t, size_t bytes) {
  const NodeId id = input_node(t, "host_input");
  return state_->slot().plan->host_input(state_->node(id), bytes);
}

std::vector<double> Executable::execute_timed(const DynMap& dyn, int iterations) {
  State& s = *state_;
  if (s.opts.buckets.enabled()) s.select_bucket(dyn);
  if (!s.slot().searched) s.ensure_searched(dyn);
  return s.slot().plan->execute_timed(dyn, iterations);
}

const SearchReport& Executable::search_report() const { return state_->slot().report; }

std::vector<std::string> Executable::rule_report() const { return state_->rule_lines(); }

PlanStats Executable::stats() const { return state_->slot().plan->stats(); }

int Executable::active_bucket() const {
  return state_->opts.buckets.enabled() ? state_->active : -1;
}

int Executable::buckets_built() const {
  return state_->opts.buckets.enabled() ? state_->built : 0;
}

const Backend& Executable::backend() const { return *state_->backend; }

const CompileOptions& Executable::options() const { return state_->opts; }

}  // namespace luminal
