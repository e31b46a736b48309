// CudaPlan: one built plan of the CUDA backend, the state its source files share.
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
#include "cuda/runtime/arena.h"
#include "cuda/runtime/cublaslt.h"
#include "cuda/runtime/device.h"
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
  /// Nonzero only for owned, persisted data (constant weights), new with every write: the fp8
  /// GEMMs keep a quantized copy exactly while it is unchanged. External and per-call data: 0.
  uint64_t version = 0;
  /// The device address of the data.
  CUdeviceptr ptr() const {
    if (external != 0) return external;
    if (staged) return staged_ptr;
    return owned ? owned->ptr : 0;
  }
};

/// The buffer of one Output-kind plan buffer: owned, or external (set_output_ptr).
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
  int sm_count;  // the device's, for launch sizing
  const std::vector<CUdeviceptr>& ptrs;  // per plan buffer
  CUdeviceptr error_flag;
  const std::string& label;
};

/// A new InputSlot::version (process-wide, never 0).
uint64_t next_slot_version();

/// The fp8 state of one matmul step (fp8_matmul.cpp): its weight quantized per output channel
/// once per version, and scratch for its quantized activations.
struct Fp8Step {
  bool active = false;  // the step runs on fp8 at the current dims and bindings
  NodeId weight = 0;
  uint64_t version = 0;        // InputSlot::version w8 was quantized from (0: not yet)
  CUdeviceptr weight_src = 0;  // and its address
  int64_t n = 0, k = 0;
  std::shared_ptr<DeviceAllocation> w8, w_scale, a8, a_scale;
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


/// Calls f(buffer, step) for every buffer each step reads or writes (repeats possible).
void for_each_buffer_use(const KernelPlan& plan, const std::function<void(int, int)>& f);

/// One graph lowered and built for a GPU (the CUDA backend's BackendPlan): cuda_plan.cpp binds
/// data, plan_setup.cpp lowers and compiles, plan_exec.cpp resolves and launches.
struct CudaPlan final : public BackendPlan {
  /// Lowers request.graph with its choices (nullptr: every default) and compiles the kernels.
  CudaPlan(const CudaOptions& opts, const DeviceInfo& dev, const BuildRequest& request);
  ~CudaPlan() override;

  // ---- BackendPlan (cuda_plan.cpp unless noted) ----
  const Graph& graph() const override { return graph_; }
  void upload(NodeId node, std::span<const std::byte> bytes, bool persist) override;
  bool load_items(const std::vector<LoadItem>& items, const LoadOptions& opts) override;  // load.cpp
  void set_device_ptr(NodeId node, void* ptr, size_t bytes) override;
  void set_output_ptr(NodeId node, void* ptr, size_t bytes) override;  // external.cpp
  std::span<std::byte> host_input(NodeId node, size_t bytes) override;  // staged_inputs.cpp
  std::vector<std::byte> get_bytes(NodeId node) override;
  Buffer remove_buffer(NodeId node) override;
  void set_buffer(NodeId node, Buffer b) override;
  BoundInput take_input(NodeId node) override;
  void give_input(NodeId node, BoundInput b) override;
  bool inputs_ready() const override;                              // plan_exec.cpp
  void execute(const DynMap& dyn, bool consume) override;           // plan_exec.cpp
  double time_us(const DynMap& dyn, int warmup, int trials) override;
  std::vector<double> execute_timed(const DynMap& dyn, int iterations) override;
  uint64_t memory_bytes() const override;
  void reserve_dim(const std::string& dim, int64_t max) override;
  void set_poison(bool on) override { poison = on || opts.poison; }
  void set_stream(void* stream) override;  // external.cpp
  void use_own_stream() override;          // external.cpp
  void synchronize() override;
  void check_errors() override;            // external.cpp
  PlanStats stats() const override;

  // ---- binding data ----
  /// Runs later work on s (external.cpp).
  void switch_stream(CUstream s);
  /// Throws "[op] <what>: ..." unless [p, p + bytes) is memory of this plan's device.
  void check_device_memory(CUdeviceptr p, size_t bytes, const char* op,
                           const std::string& what) const;

  // ---- checkpoint loading (load.cpp) ----
  bool owned_fits(const InputSlot& s, uint64_t bytes) const;
  void check_load_fits(uint64_t needed, const LoadOptions& opts) const;

  // ---- staged host inputs (staged_inputs.cpp) ----
  void init_staged();                           // lays out the region at plan time
  bool is_staged(NodeId node) const;            // the input has a slot in the region
  std::byte* stage(NodeId node, size_t bytes);  // binds node's pinned slot (is_staged)
  void upload_staged();                            // hot path: one H2D copy + one event
  void wait_staged();                              // before the host writes the region
  void relayout_staged(const StagingLayout& old);  // new region and block; keeps bound data

  // ---- running the plan (plan_exec.cpp) ----
  bool resolve(const DynMap& dyn);
  std::vector<size_t> buffer_sizes(const DynMap& dyn) const;
  std::vector<ArenaRequest> arena_requests(const std::vector<size_t>& bytes) const;
  std::vector<CUdeviceptr> place_buffers(const std::vector<size_t>& bytes);
  void reserve_for_bucket(const DynMap& dyn);  // arena and outputs at reserve_max of reserve_dim
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

  // ---- fp8 GEMMs (fp8_matmul.cpp) ----
  /// Step i's matmul as fp8 (quantize A, then an e4m3 cuBLASLt GEMM) when the precision is FP8
  /// and the step qualifies (a constant [n, k] weight, k and n multiples of 16); else nullopt.
  std::optional<Op> fp8_op(size_t i, const compiler::MatmulStep& m, const StepContext& c);
  /// True when quantize + the e4m3 GEMM s (pointers p) times faster than step m's bf16 GEMM
  /// (CudaOptions::fp8_timed; timed once per shape `key` and process, into scratch outputs).
  bool fp8_wins(const std::string& key, const compiler::MatmulStep& m, const StepContext& c,
                const MatmulShape& s, const MatmulPointers& p, const Op& quantize);
  /// Quantizes the weights of active fp8 steps whose data changed since (stream-ordered).
  void refresh_fp8_weights();

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

  const Graph& graph_;
  CudaOptions opts;          // the backend's options
  DynMap dim_hints;          // the build request's
  Precision precision = Precision::F32;
  const DeviceInfo& dev;
  DeviceCaps caps;           // dev's, for custom kernels
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
  bool poison = false;  // fill outputs and arena with 0xFF before each run (opts.poison, the search)

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
  bool staged_in_graph = false;        // opts.staged_in_graph: the copy is a graph node
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
  int gemv_forced_splits = 0;            // opts.gemv.splits (0: gemv_splits decides)
  std::map<CUfunction, CUfunction> gemv_group_fns;       // GEMV entry -> its grouped entry
  std::vector<std::pair<int, int>> gemv_group_heads_of;  // gemv.h gemv_group_heads
  int gemv_launches_saved = 0;  // by grouping and residual fusion, at the last resolve
  std::vector<GemvResidual> gemv_residual_fusions;  // gemv.h; empty: opts.gemv.residual off
  std::vector<std::unique_ptr<Fp8Step>> fp8_steps;  // per step; null when never fp8
  CUfunction fp8_quantize_fn = nullptr;             // loaded at the first fp8 step
  bool fp8_unsupported = false;   // cuBLASLt had no row-wise scaled e4m3 GEMM: bf16 from then on
  int64_t fp8_weight_quantizations = 0;  // weights (re)quantized so far
  int64_t fp8_declined = 0;  // steps that qualified but timed slower in fp8 (last build_ops)
  int graph_branches = 1;                    // most streams a captured graph spreads steps over
  int last_capture_streams = 0;              // streams the last capture used
  bool last_capture_prioritized = false;     // the last capture ran its lead stream at a higher priority
  StreamHandle lead_stream;                  // opts.branch_priorities: the lead chain's (highest priority)
  std::vector<StreamHandle> branch_streams;  // side streams of the capture (beyond own_stream)
  std::vector<EventHandle> step_events;      // per op, plus one for the capture's start
  GraphExecHandle graph_exec;
  bool resolved = false;
  bool ever_resolved = false;  // sym_values hold the dims of a successful resolve
  bool dirty = true;           // a bound pointer or size changed since the last resolve
  std::string reserve_dim_name;       // reserve_dim: size the arena for this dim's max once
  int64_t reserve_max = 0;
  bool reserved_for_bucket = false;  // reserve_for_bucket ran (a dim-bucket plan)
};

/// The DeviceCaps of a device (CUDA attributes: SMs, shared memory, L2).
DeviceCaps device_caps(const DeviceInfo& dev);

}  // namespace luminal::cuda
