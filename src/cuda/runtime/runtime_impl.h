// CudaRuntime::Impl: the state behind the CUDA runtime, shared by its source files.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/branches.h"
#include "compiler/kernel_plan.h"
#include "compiler/rules/rules.h"
#include "compiler/search/candidate.h"
#include "cuda/runtime/arena.h"
#include "cuda/runtime/cublaslt.h"
#include "cuda/runtime/handles.h"
#include "cuda/runtime/memory.h"
#include "cuda/runtime/staging_layout.h"
#include "luminal/cuda.h"

namespace luminal::cuda {

/// Data bound to one Input node: owned device memory or an external pointer.
struct InputSlot {
  std::shared_ptr<DeviceAllocation> owned;  // kept after consumption, for reuse by the next upload
  CUdeviceptr external = 0;                 // set_device_ptr; never freed
  CUdeviceptr staged_ptr = 0;               // this input's slot in the staged device block
  size_t bytes = 0;                         // bytes of valid data
  bool has_data = false;
  bool persist = false;
  bool staged = false;  // the data is in the staged pinned region (uploaded by execute())
  /// The device address of the data.
  CUdeviceptr ptr() const {
    if (external != 0) return external;
    if (staged) return staged_ptr;
    return owned ? owned->ptr : 0;
  }
};

/// The buffer of one Output-kind plan buffer: owned, or external (set_output_device_ptr).
struct OutputSlot {
  std::shared_ptr<DeviceAllocation> alloc;
  CUdeviceptr external = 0;   // the caller's memory; never freed
  size_t external_bytes = 0;  // its size as registered
  size_t bytes = 0;           // bytes of the last result
  bool valid = false;         // written by the last successful execute
  /// The device address the result is written to.
  CUdeviceptr ptr() const { return external != 0 ? external : (alloc ? alloc->ptr : 0); }
};

/// One kernel launch with its parameter values (pointers and dims, 8 bytes each).
struct Launch {
  CUfunction fn = nullptr;
  unsigned grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  unsigned shared = 0;
  std::vector<unsigned long long> values;
  std::vector<void*> params;  // params[i] == &values[i]
};

/// A matmul step whose GEMV can also do the Add that follows it: out = round(product) + residual
/// (gemv.h gemv_residuals).
struct GemvResidual {
  int matmul_step = -1, add_step = -1;  // plan steps
  int residual = -1, out = -1;          // plan buffers
};

/// One resolved step: a kernel launch, a cuBLASLt matmul, the ops of a custom op's decomposition,
/// or nothing (empty at these dims).
struct Op {
  const std::string* label = nullptr;  // "kernel k3_sum_reduce", for errors
  std::optional<Launch> launch;
  std::unique_ptr<MatmulCall> matmul;
  std::vector<Op> sub;  // a custom op without a CUDA kernel: its decomposition's steps
};

/// What building the Op of one step needs.
struct StepContext {
  const DynMap& dyn;
  const std::vector<CUdeviceptr>& ptrs;  // per plan buffer
  CUdeviceptr error_flag;
  const std::string& label;
};

/// Checks a byte count against an input's dtype and (static) shape; throws "[op] ..." naming it.
void check_input_bytes(const Graph& g, NodeId id, size_t bytes, const char* op);

/// The launch of a generated kernel (nullopt when it has no threads at these dims).
std::optional<Launch> kernel_launch(const compiler::KernelStep& k, CUfunction fn,
                                    const StepContext& c);
/// A cuBLASLt matmul step with its dims and pointers bound.
std::unique_ptr<MatmulCall> matmul_call(const compiler::MatmulStep& m, CublasLt& blas,
                                        const StepContext& c);
/// Points every launch's params at its values (call once the Op is in its final place).
void point_params_at_values(Op& op);
/// True when running the Op enqueues any device work.
bool launches_work(const Op& op);

/// A loaded kernel function.
struct LoadedKernel {
  CUfunction fn = nullptr;
  unsigned shared = 0;
};

using compiler::KernelPlan;

/// The plan buffers each step reads and writes.
std::vector<compiler::StepBuffers> step_buffers(const compiler::KernelPlan& plan);

/// The number of graph branches: LUMINAL_GRAPH_BRANCHES when set (>= 1), else `configured`.
int graph_branches_from_env(int configured);

/// Calls f(buffer, step) for every buffer each step reads or writes (repeats possible).
void for_each_buffer_use(const KernelPlan& plan, const std::function<void(int, int)>& f);

/// The runtime state: cuda_runtime.cpp binds data, plan_setup.cpp lowers and compiles,
/// plan_exec.cpp resolves and launches.
struct CudaRuntime::Impl {
  /// Lowers g with the search's `choices` (nullptr: the heuristic plan) and compiles it.
  Impl(const Graph& g, CudaOptions opts, compiler::search::Choices* choices = nullptr);
  ~Impl();

  // ---- binding data (cuda_runtime.cpp) ----
  void upload(NodeId node, std::span<const std::byte> bytes, bool persist);
  void set_device_ptr(NodeId node, void* ptr, size_t bytes);
  void set_output_device_ptr(NodeId node, void* ptr, size_t bytes);  // external.cpp
  void set_stream(CUstream s);                                       // external.cpp
  /// Throws "[op] <what>: ..." unless [p, p + bytes) is memory of this runtime's device.
  void check_device_memory(CUdeviceptr p, size_t bytes, const char* op,
                           const std::string& what) const;
  std::vector<std::byte> get_bytes(NodeId node);
  Buffer remove_buffer(NodeId node);
  void set_buffer(NodeId node, Buffer b);

  // ---- checkpoint loading (load.cpp) ----
  void load_items(const std::vector<LoadItem>& items, const LoadOptions& opts);
  bool owned_fits(const InputSlot& s, uint64_t bytes) const;
  void check_load_fits(uint64_t needed, const LoadOptions& opts) const;

  // ---- staged host inputs (staged_inputs.cpp) ----
  void init_staged();                           // lays out the region at plan time
  bool is_staged(NodeId node) const;            // the input has a slot in the region
  std::byte* stage(NodeId node, size_t bytes);  // binds node's pinned slot (is_staged)
  std::span<std::byte> host_input(NodeId node, size_t bytes);
  void upload_staged();                            // hot path: one H2D copy + one event
  void wait_staged();                              // before the host writes the region
  void relayout_staged(const StagingLayout& old);  // new region and block; keeps bound data

  // ---- running the plan (plan_exec.cpp) ----
  /// Runs the plan; `consume` = false keeps non-persisted inputs bound (the search's runs).
  void execute(const DynMap& dyn, bool consume = true);
  /// True when every input the plan reads has data.
  bool inputs_ready() const;
  bool resolve(const DynMap& dyn);
  std::vector<size_t> buffer_sizes(const DynMap& dyn) const;
  std::vector<ArenaRequest> arena_requests(const std::vector<size_t>& bytes) const;
  std::vector<CUdeviceptr> place_buffers(const std::vector<size_t>& bytes);
  void reserve_for_bucket(const DynMap& dyn);  // arena and outputs at the bucket's max
  void build_ops(const DynMap& dyn, const std::vector<CUdeviceptr>& ptrs);
  /// Residual adds done by their GEMV, then GEMV launches that share their A merged (gemv.h); one
  /// stream only.
  void fuse_gemv_ops();
  void run_op(Op& op, CUstream s, bool sync_each);
  void run_ops(CUstream s, bool sync_each);
  void launch_plan();  // the captured graph, or the steps one by one
  void capture_graph();
  void poison_buffers();

  // ---- graph branches (graph_branches.cpp) ----
  /// The memory each resolved step reads and writes (buffer_ptrs / buffer_bytes).
  std::vector<compiler::StepAccess> step_accesses() const;
  /// Enqueues the ops on `origin` (capturing), spread over up to graph_branches streams.
  void capture_ops(CUstream origin);

  // ---- setting up (plan_setup.cpp) ----
  void validate_plan() const;
  void collect_plan_info();
  void compile_kernels();
  LoadedKernel load_kernel(const std::string& source, const std::string& entry, unsigned shared);

  // ---- custom ops (custom_step.cpp) ----
  Op custom_op(size_t step_index, const compiler::CustomStep& step, const DynMap& dyn,
               const std::vector<CUdeviceptr>& ptrs);
  /// Step `step_index`'s workspace of at least `bytes` (allocated and zeroed on first need), or 0.
  CUdeviceptr custom_workspace(size_t step_index, size_t bytes, const std::string& op_name);
  std::vector<Op> decomposed_ops(size_t step_index, const compiler::CustomStep& step,
                                 const std::vector<std::vector<int64_t>>& dims,
                                 const std::vector<DType>& dtypes, size_t out_numel,
                                 const std::vector<CUdeviceptr>& in_ptrs,
                                 const std::vector<CUdeviceptr>& ptrs);

  // Helpers.
  InputSlot& slot(NodeId node);
  std::string node_label(NodeId node) const;
  void check_error_flag();
  void sync_stream();

  const Graph& graph;
  CudaOptions opts;
  const DeviceInfo& dev;
  KernelPlan plan;
  std::string target;  // NVRTC target ("sm_90")
  StreamHandle stream_owner;
  CUstream own_stream = nullptr;   // stream_owner.get(): graphs are captured here
  CUstream stream = nullptr;       // where work runs: own_stream, or the caller's (set_stream)
  std::unique_ptr<CublasLt> blas;  // created when the plan has matmuls
  Staging staging;
  PinnedBuffer readback;   // D2H landing zone for get_bytes
  PinnedBuffer flag_host;  // the error flag's host copy
  std::shared_ptr<DeviceAllocation> error_flag;
  bool poison = false;  // LUMINAL_CUDA_POISON=1: fill outputs and arena with 0xFF first

  std::vector<InputSlot> inputs;     // per NodeId (Input nodes)
  std::vector<NodeId> input_nodes;   // every Input node of the graph
  std::vector<NodeId> plan_inputs;   // Input nodes the plan reads
  std::vector<OutputSlot> outputs;   // per plan buffer (used for Output kind)
  std::vector<int> output_buffers;   // plan buffers of Output kind
  std::vector<bool> buffer_used;     // per plan buffer: some step touches it
  std::vector<std::string> symbols;  // dynamic dims anything in the plan uses
  std::vector<int64_t> sym_values;   // their values at the last resolve
  // Staged inputs: every owned, non-persisted input the plan reads lives in one pinned region,
  // mirrored by one device block, uploaded by one copy per execute.
  std::vector<NodeId> staged_nodes;  // by layout key
  std::vector<int> staged_key;       // per NodeId: its key, or -1
  StagingLayout staged_layout;
  PinnedBuffer staged_host;
  std::shared_ptr<DeviceAllocation> staged_dev;
  EventHandle staged_done;             // recorded behind the last staged copy
  bool staged_pending = false;         // that copy may still read staged_host
  bool staged_in_graph = false;        // LUMINAL_STAGED_IN_GRAPH=1: the copy is a graph node
  bool graph_has_staged_copy = false;  // graph_exec starts with the staged copy
  std::shared_ptr<DeviceAllocation> arena;
  size_t arena_bytes = 0;           // bytes the current layout uses
  std::vector<std::string> labels;  // per step: host_ops() entries

  // By source; shared with the process's other live plans on this device (plan_setup.cpp).
  std::unordered_map<std::string, std::shared_ptr<ModuleHandle>> modules;
  std::vector<LoadedKernel> step_kernels;                 // per step (KernelStep, GEMV)
  std::map<std::string, LoadedKernel> custom_kernels;     // by source + entry

  std::vector<std::shared_ptr<DeviceAllocation>>
      custom_arenas;  // per step: decomposition intermediates
  std::vector<std::shared_ptr<DeviceAllocation>>
      custom_workspaces;  // per step: CustomKernel::workspace_bytes (zeroed, never poisoned)
  std::vector<Op> ops;    // per step, resolved
  std::vector<CUdeviceptr> buffer_ptrs;  // per plan buffer, at the last resolve
  std::vector<size_t> buffer_bytes;      // per plan buffer, at the last resolve
  bool matmul_autotune = false;          // CudaOptions::matmul_autotune (LUMINAL_MATMUL_AUTOTUNE)
  int gemv_forced_splits = 0;            // LUMINAL_GEMV_SPLITS (0: gemv_splits decides)
  std::map<CUfunction, CUfunction> gemv_group_fns;       // GEMV entry -> its grouped entry
  std::vector<std::pair<int, int>> gemv_group_heads_of;  // gemv.h gemv_group_heads
  int gemv_launches_saved = 0;  // by grouping and residual fusion, at the last resolve
  std::vector<GemvResidual> gemv_residual_fusions;  // gemv.h; empty: LUMINAL_GEMV_RESIDUAL=0
  int graph_branches = 1;                    // most streams a captured graph spreads steps over
  int last_capture_streams = 0;              // streams the last capture used
  std::vector<StreamHandle> branch_streams;  // side streams of the capture (beyond own_stream)
  std::vector<EventHandle> step_events;      // per op, plus one for the capture's start
  GraphExecHandle graph_exec;
  bool resolved = false;
  bool ever_resolved = false;  // sym_values hold the dims of a successful resolve
  bool dirty = true;           // a bound pointer or size changed since the last resolve
  bool reserved_for_bucket = false;  // reserve_for_bucket ran (a dim-bucket plan)
};

/// The search state for g, or nullptr (search off and no fixed candidate). A graph with states
/// gets the rules' auto choices instead of a search. Throws on a malformed CudaOptions::candidate.
std::unique_ptr<CudaRuntime::Search> make_search(const Graph& g, const CudaOptions& opts);
/// The graph a plan runs: the user's, or the rules' rebuilt one for a graph with states.
const Graph& plan_graph(const Graph& user, const CudaRuntime::Search* search);

/// Moves every bound input of the user's graph from one plan to another (node ids through each
/// plan's map, empty = the identity): device blocks and external pointers change owner, staged
/// host bytes are copied. Used by the search and by dim buckets.
void move_inputs(const Graph& user, CudaRuntime::Impl& from, const std::vector<NodeId>& from_map,
                 CudaRuntime::Impl& to, const std::vector<NodeId>& to_map);

/// The search's state in a CudaRuntime (plan_search.cpp): the rewrite rules' matches, the graphs
/// their candidates run, which one is active, and what it decided.
struct CudaRuntime::Search {
  /// Finds the rewrite rules' matches in g (the user's graph).
  Search(const Graph& g, const CudaOptions& opts);
  /// For a graph that cannot be searched (it has states: candidates would rerun on inputs the
  /// first run changed): installs each rule's auto choice (rules::apply "auto", the rules'
  /// measured order) without timing; done is set. The plan then runs active_graph.
  void take_auto(const Graph& user);
  const Graph* active_graph = nullptr;  // take_auto's rebuilt graph (nullptr: the user's)
  /// The rule choice points (one per match; "decomposed", the graph as built, first).
  std::vector<compiler::search::ChoicePoint> rule_points;
  std::vector<size_t> rule_match;  // per rule point: its index in `matches`
  std::vector<compiler::rules::RuleMatch> matches;
  /// Rebuilt graphs by their rule picks' text ("" = the user's graph, never stored).
  std::map<std::string, compiler::rules::Rebuilt> graphs;
  std::vector<NodeId> remap;  // user node -> active graph node (empty: the identity)
  bool done = false;          // searched (or the fixed candidate installed)
  SearchReport report;
};

/// What the caller registered on a CudaRuntime, kept so that every plan that starts running (a
/// search's winner, another bucket's plan) gets it too (CudaRuntime::reapply_registered).
struct CudaRuntime::Registered {
  std::map<NodeId, std::pair<void*, size_t>> output_ptrs;  // set_output_device_ptr, by user node
  std::optional<CUstream> stream;  // set_stream (nullptr: the legacy stream); nullopt: own stream
};

/// Dim buckets (CudaOptions::buckets): the plans of the buckets not running now (buckets.cpp).
struct CudaRuntime::Buckets {
  /// Validates the buckets against g (the dim must be one of its dynamic dims) and picks the
  /// first active bucket: the one holding opts.dim_hints[dim], else the last.
  Buckets(const Graph& g, const CudaOptions& opts);
  /// The options of bucket i's plan: one range, its max as the dim hint.
  CudaOptions options(int i) const;
  /// A parked plan: its search state (owning any rebuilt graph) and the plan.
  struct Parked {
    std::unique_ptr<Search> search;
    std::unique_ptr<Impl> impl;
  };
  CudaOptions base;            // the runtime's options (all ranges)
  std::vector<Parked> parked;  // per range; the active one's live in search_ / impl_
  int active = -1;
  int built = 1;
};

}  // namespace luminal::cuda
