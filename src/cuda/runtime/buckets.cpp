// Dim buckets on the CUDA runtime (shared/DESIGN.md section 9): one plan per range of a dynamic
// dim, each lowered with its range's max as the dim hint, searched at the first execute in its
// range and sized for the max. execute() runs the plan of the value's range: the same plan as
// last time costs nothing here; another one takes over the bound inputs (device blocks change
// owner, nothing is copied but staged host inputs) and the caller's registrations.
#include <fmt/format.h>

#include <stdexcept>
#include <utility>

#include "cuda/runtime/runtime_impl.h"

namespace luminal::cuda {

namespace {

// True when some node's shape uses the dynamic dim `dim`.
bool graph_uses_dim(const Graph& g, const std::string& dim) {
  for (NodeId n = 0; n < g.size(); ++n)
    for (const Expr& e : g.node(n).shape)
      for (const std::string& s : e.symbols())
        if (s == dim) return true;
  return false;
}

}  // namespace

CudaRuntime::Buckets::Buckets(const Graph& g, const CudaOptions& opts) : base(opts) {
  const BucketOptions& b = opts.buckets;
  b.validate();
  if (!graph_uses_dim(g, b.dim))
    throw std::invalid_argument(
        fmt::format("[bucket] '{}' is not a dynamic dim of the graph", b.dim));
  parked.resize(b.ranges.size());
  active = int(b.ranges.size()) - 1;
  if (auto it = opts.dim_hints.find(b.dim); it != opts.dim_hints.end())
    if (const int i = find_bucket(b.ranges, it->second); i >= 0) active = i;
}

CudaOptions CudaRuntime::Buckets::options(int i) const {
  CudaOptions o = base;
  const DimBucket range = base.buckets.ranges.at(size_t(i));
  o.buckets.ranges = {range};
  o.dim_hints[base.buckets.dim] = range.max;
  return o;
}

int CudaRuntime::active_bucket() const { return buckets_ ? buckets_->active : -1; }

int CudaRuntime::buckets_built() const { return buckets_ ? buckets_->built : 0; }

void CudaRuntime::select_bucket(const DynMap& dyn) {
  if (!buckets_) return;
  Buckets& bk = *buckets_;
  const BucketOptions& b = bk.base.buckets;
  const auto it = dyn.find(b.dim);
  if (it == dyn.end())
    throw std::runtime_error(fmt::format(
        "[execute] dynamic dim '{}' has no value in the DynMap (the runtime's buckets dispatch "
        "on it)",
        b.dim));
  const int i = find_bucket(b.ranges, it->second);
  if (i < 0)
    throw std::out_of_range(fmt::format("[execute] {} = {} is outside every bucket ({}..{})",
                                        b.dim, it->second, b.ranges.front().min,
                                        b.ranges.back().max));
  if (i == bk.active) return;
  Buckets::Parked& next = bk.parked[size_t(i)];
  if (!next.impl) {  // built before anything moves, so a failure leaves the running plan intact
    const CudaOptions o = bk.options(i);
    auto search = make_search(graph_, o);
    next.impl = std::make_unique<Impl>(plan_graph(graph_, search.get()), o);
    next.search = std::move(search);
    ++bk.built;
  }
  auto remap = [](const std::unique_ptr<Search>& s) {
    return s ? s->remap : std::vector<NodeId>{};
  };
  move_inputs(graph_, *impl_, remap(search_), *next.impl, remap(next.search));
  Buckets::Parked& prev = bk.parked[size_t(bk.active)];
  prev.search = std::move(search_);
  prev.impl = std::move(impl_);
  search_ = std::move(next.search);
  impl_ = std::move(next.impl);
  bk.active = i;
  reapply_registered();
}

}  // namespace luminal::cuda
