// The seam between the compiler and a backend (shared/DESIGN.md section 6): the compiler decides
// (rules, search, plan cache, dim buckets); a backend lowers one candidate to its code, builds it,
// runs and times it, and reports its device. How to add a backend: implement Backend and
// BackendPlan in src/<backend>/, register its device name in src/api/devices.cpp, and run the op
// harness (tests/ops) on it against the reference.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/device.h"
#include "luminal/precision.h"
#include "luminal/runtime.h"

namespace luminal {

namespace compiler::search {
class Choices;
}

/// What one built plan launches (for --stats, tests and reports).
struct PlanStats {
  size_t kernels = 0;                       // kernel launches (or steps) per execute
  std::vector<std::string> steps;           // one line per step ("kernel k3_sum_reduce", ...)
  std::map<std::string, int64_t> counters;  // backend-specific ("graph_streams", ...)
};

/// Data bound to one input, moved between two plans of the same backend (opaque to the compiler).
struct BoundInput {
  std::shared_ptr<void> data;  // backend-defined; null: the input had no data
  /// True when something was bound.
  explicit operator bool() const { return data != nullptr; }
};

/// What a backend builds: one candidate of one graph.
struct BuildRequest {
  const Graph& graph;
  /// The lowering's choice points answer from here (nullptr: every default).
  compiler::search::Choices* choices = nullptr;
  /// Typical values of dynamic dims (a bucket's max), for cost decisions and buffer sizing.
  DynMap dim_hints;
  Precision precision = Precision::F32;
};

/// One graph lowered and built for a device: binds data by the nodes of graph(), runs, times.
/// Every call that is not supported on a backend throws "[<op>] ... not supported by <backend>".
class BackendPlan {
 public:
  virtual ~BackendPlan() = default;
  /// The graph the plan runs (every NodeId below is one of its nodes).
  virtual const Graph& graph() const = 0;

  /// Owned bytes for an Input (checked by the caller); persisted ones survive execute().
  virtual void upload(NodeId input, std::span<const std::byte> bytes, bool persist) = 0;
  /// Checkpoint tensors uploaded the backend's way; false lets the caller upload() each.
  virtual bool load_items(const std::vector<LoadItem>& items, const LoadOptions& opts);
  /// Zero-copy input in the device's memory (the caller owns it and keeps it alive).
  virtual void set_device_ptr(NodeId input, void* ptr, size_t bytes);
  /// Output written into the caller's device memory (nullptr: back to a plan-owned buffer).
  virtual void set_output_ptr(NodeId output, void* ptr, size_t bytes);
  /// A host buffer the input is written into in place and read by the next execute().
  virtual std::span<std::byte> host_input(NodeId input, size_t bytes);
  /// A result's (or an input's) bytes; synchronizes.
  virtual std::vector<std::byte> get_bytes(NodeId node) = 0;
  /// Moves a buffer out (the plan forgets it) / in as an Input's data.
  virtual Buffer remove_buffer(NodeId node) = 0;
  virtual void set_buffer(NodeId input, Buffer b) = 0;
  /// Moves whatever is bound to `input` out (empty when nothing is) / into another plan of the
  /// same backend: how inputs follow the search's candidates and dim buckets without copies.
  virtual BoundInput take_input(NodeId input) = 0;
  virtual void give_input(NodeId input, BoundInput b) = 0;

  /// True when every input the plan reads has data.
  virtual bool inputs_ready() const = 0;
  /// Runs once; `consume` = false keeps non-persisted inputs bound (the search's repeated runs).
  virtual void execute(const DynMap& dyn, bool consume) = 0;
  /// Median time per run in microseconds of `trials` runs after `warmup` (inputs kept).
  virtual double time_us(const DynMap& dyn, int warmup, int trials) = 0;
  /// execute() `iterations` times back to back; each call's time in microseconds.
  virtual std::vector<double> execute_timed(const DynMap& dyn, int iterations) = 0;
  /// Memory the plan holds beyond its inputs (intermediates, owned outputs), in bytes.
  virtual uint64_t memory_bytes() const = 0;
  /// Sizes intermediates and owned outputs once for `dim` at `max` (a dim bucket's plan), so every
  /// smaller value reuses them.
  virtual void reserve_dim(const std::string& dim, int64_t max) {
    (void)dim;
    (void)max;
  }
  /// Fill outputs and intermediates with NaN / 0xFF before each run (the search's check).
  virtual void set_poison(bool on) { (void)on; }
  /// Runs later work on this stream of the device (nullptr: the default stream); no-op on hosts.
  virtual void set_stream(void* stream) { (void)stream; }
  /// Back to the plan's own stream.
  virtual void use_own_stream() {}
  /// Waits for queued work.
  virtual void synchronize() {}
  /// Waits, then throws if a kernel reported bad input since the last check.
  virtual void check_errors() {}
  /// What the plan launches.
  virtual PlanStats stats() const = 0;
};

/// A device and the code generator for it. Thread-compatible; plans may outlive nothing: a
/// backend outlives its plans (Executable holds a shared_ptr).
class Backend {
 public:
  virtual ~Backend() = default;
  /// "reference", "cuda", "cpu".
  virtual std::string kind() const = 0;
  /// The device as the plan cache keys it: "cuda:0 NVIDIA H200 (sm_90)".
  virtual std::string description() const = 0;
  /// The backend options that change a plan, as text for the plan-cache key.
  virtual std::string options_key() const { return ""; }
  /// The device's capabilities (custom ops size their kernels by them).
  virtual const DeviceCaps& caps() const = 0;
  /// Lowers and builds one candidate; throws on failure (the search discards it).
  virtual std::unique_ptr<BackendPlan> build(const BuildRequest& request) const = 0;
  /// True when this backend has a kernel of its own for the custom op named `op` (CustomOp::name();
  /// else it runs the op's decomposition, and a rule offering the op gains nothing here).
  virtual bool has_kernel(std::string_view op) const = 0;
  /// True when the search may time candidates here (false: the default candidate only).
  virtual bool searchable() const { return true; }
  /// The rules' default choice: "auto" (the first available alternative of each match) or
  /// "none" (the graph as built: the reference runs what the user wrote).
  virtual std::string default_alternative() const { return "auto"; }
};

}  // namespace luminal
