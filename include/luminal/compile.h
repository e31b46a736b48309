// compile(graph, target, options) -> Executable: the one entry from a graph to something that runs
// (shared/DESIGN.md sections 1 and 9). The compiler expands the rewrite rules once into choice
// points, searches them (timing candidates through the backend), keeps the plan cache, dim buckets
// and graphs with states; the Executable binds inputs, launches the chosen plan and reports.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "luminal/backend.h"
#include "luminal/precision.h"
#include "luminal/runtime.h"
#include "luminal/search.h"

namespace luminal {

/// Values of Inputs fixed at compile time (a frontend's lifted constants, e.g. DLRM's li / lj
/// index tensors): what a rule may read; nullopt for an input whose value is not known.
using ConstantLookup = std::function<std::optional<std::span<const std::byte>>(NodeId)>;

/// The backend a graph compiles for (luminal/devices.h turns "cuda", "reference", ... into one).
using Target = std::shared_ptr<const Backend>;

/// How compile() builds and searches. Every field is plain data; the environment is read only at
/// the CLI and Python boundary (luminal/environment.h). Fields that change a plan are part of the
/// plan-cache key.
struct CompileOptions {
  /// fp32 (exact), tf32 (f32 matmuls on tensor cores); bf16/int8 are properties of the graph's
  /// dtypes (a model built at that precision), used here for the search's check tolerance.
  Precision precision = Precision::F32;
  /// The search over the candidates at the first execute() with every input bound.
  SearchOptions search;
  /// One plan per range of a dynamic dim (off when buckets.dim is empty).
  BucketOptions buckets;
  /// Typical values of dynamic dims, for lowering cost decisions (a bucket's max overrides).
  DynMap dim_hints;
  /// Narrows the rewrite rules' choice: "auto" (every available alternative, searched; the
  /// backend's default first), "none" / "decomposed" (the graph as built), or one alternative by
  /// name (rule_alternatives(): where a match cannot take it, its graph stays and the report says
  /// why).
  std::string alternative = "auto";
  /// Runs exactly this candidate ("key=option,..." as SearchReport::candidate prints it) instead
  /// of searching; unknown keys are ignored, as are options a choice point does not offer.
  std::string candidate;
  /// Inputs whose values are fixed (the frontend's lifted constants), for the rules to read.
  ConstantLookup constants;
  /// Look up and store winners in the on-disk plan cache (LUMINAL_CACHE_DIR/plans).
  bool plan_cache = true;
};

/// A compiled graph on one backend. Binds inputs by the tensors of the graph it was compiled from
/// (the rules' rewrites are internal), runs the plan the compiler chose, reads results. Consumed-
/// input semantics as Runtime's. Not thread-safe.
class Executable final : public Runtime {
 public:
  /// compile(): checks the options (bad buckets, a malformed candidate) before the device is
  /// touched, expands the rules and builds the default plan; the search runs at the first
  /// execute() with every input bound.
  Executable(const Graph& g, Target target, CompileOptions options = {});
  ~Executable() override;

  void upload(NodeId input, std::span<const std::byte> bytes, bool persist) override;
  bool load_items(const std::vector<LoadItem>& items, const LoadOptions& opts) override;
  void set_device_ptr(const GraphTensor& t, void* ptr, size_t bytes) override;
  void execute(const DynMap& dyn = {}) override;
  std::vector<std::byte> get_bytes(const GraphTensor& t) override;
  Buffer remove_buffer(const GraphTensor& t) override;
  void set_buffer(const GraphTensor& t, Buffer b) override;
  std::vector<std::string> host_ops() const override;
  size_t kernel_count() const override;

  /// Output t writes its result into [ptr, ptr + bytes) of the target's memory instead of an
  /// owned buffer (the caller keeps it alive while queued work may write it); `bytes` must equal
  /// its size at each execute; the same pointer again costs nothing; nullptr returns to an owned
  /// buffer. Kept across the search's winner and bucket switches.
  void set_output_ptr(const GraphTensor& t, void* ptr, size_t bytes);
  /// Runs later work on `stream` (a CUstream on CUDA; nullptr: the legacy default stream); kept
  /// across plan switches. A no-op on host backends.
  void set_stream(void* stream);
  /// Back to the plan's own stream.
  void use_own_stream();
  /// Waits for queued work.
  void synchronize();
  /// Waits, then throws "[cuda] a kernel reported bad input: ..." if one did since the last check
  /// (zero-copy callers learn of out-of-range indices here; reads check by themselves).
  void check_errors();
  /// A host buffer of `bytes` (default: the input's static size) that a static, non-persisted
  /// input is written into in place; the next execute() reads it. Valid until then.
  std::span<std::byte> host_input(const GraphTensor& t, size_t bytes = SIZE_MAX);
  /// Benchmarking: execute(dyn) `iterations` times back to back; each call's time in us (device
  /// events on CUDA). Inputs must outlive every call (persisted, loaded or device pointers).
  std::vector<double> execute_timed(const DynMap& dyn, int iterations);

  /// What the search decided (ran = false until the first execute with every input bound); with
  /// dim buckets, for the plan of the last execute's bucket.
  const SearchReport& search_report() const;
  /// One line per region a rewrite rule recognized: its shape, the alternative the plan runs
  /// and why the others were not ("dlrm: bottom 13-64-16, ... -> mega").
  std::vector<std::string> rule_report() const;
  /// The running plan's statistics (kernels, steps, backend counters such as "graph_streams").
  PlanStats stats() const;
  /// The bucket (index in options.buckets.ranges) whose plan runs; -1 without buckets.
  int active_bucket() const;
  /// Bucket plans built so far (0 without buckets).
  int buckets_built() const;
  /// The backend it runs on.
  const Backend& backend() const;
  /// The options it was compiled with.
  const CompileOptions& options() const;

  struct State;  // opaque (src/compiler/executable_state.h)

 private:
  std::unique_ptr<State> state_;
};

/// The CPU reference runtime as a target (the oracle: runs the graph as built unless an
/// alternative is named, never searched).
Target reference_backend();

/// Every name CompileOptions::alternative accepts: "auto", "none", "decomposed" and each
/// alternative a rewrite rule offers ("mega", "fused", "chain", ...).
const std::vector<std::string>& rule_alternatives();

/// Compiles g for a target: std::make_unique<Executable>(g, target, options).
std::unique_ptr<Executable> compile(const Graph& g, Target target, CompileOptions options = {});

}  // namespace luminal
