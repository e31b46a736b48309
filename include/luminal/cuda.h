// The CUDA runtime: NVRTC-generated kernels, cuBLASLt matmuls and whole-plan CUDA graphs.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "luminal/precision.h"
#include "luminal/runtime.h"
#include "luminal/search.h"

namespace luminal::cuda {

/// True when built with CUDA and a device is present.
bool available();
/// "NVIDIA H200 (sm_90)", or why there is no device.
std::string device_description();

/// Options of the CUDA runtime.
struct CudaOptions {
  int device = 0;
  bool cuda_graph = true;  // capture the plan as one CUDA graph
  // Most streams the captured graph spreads independent steps over (parallel branches; 1 = one
  // chain in plan order, the default: the default DLRM plans are one chain anyway, and the full GPU
  // suite has not yet run with branches on). The DLRM split sparse path asks for 4.
  // LUMINAL_GRAPH_BRANCHES overrides it.
  int graph_branches = 1;
  // Each new cuBLASLt matmul shape times the heuristic's top 8 algorithms once on the device (in
  // isolation, back to back) and keeps the fastest (the heuristic's first unless another is >3%
  // faster). Off by default: on the H200 at the DLRM shapes the isolated timings picked algorithms
  // that ran slower inside the plan (docs/benchmarks.md, 2026-12-03 runtime section); timing whole
  // plans is the search's job. LUMINAL_MATMUL_AUTOTUNE=0|1 overrides it.
  bool matmul_autotune = false;
  DynMap dim_hints;  // typical values of dynamic dims, for lowering cost decisions (e.g. cuBLASLt
                     // or not)
  // TF32: f32 cuBLASLt matmuls use TF32 tensor cores (CUBLAS_COMPUTE_32F_FAST_TF32; needs sm_80+).
  // F32 keeps them exact. BF16/Int8 are properties of the graph (its dtypes), not of the runtime.
  Precision precision = Precision::F32;
  // The search: at the first execute() with every input bound, the plan's alternatives (the
  // rewrite rules' and the lowering's choice points) are compiled, run on those inputs, checked
  // against the heuristic plan's outputs and timed; the fastest is kept (and stored in the plan
  // cache, $LUMINAL_CACHE_DIR/plans). search.enabled = false keeps the heuristic plan.
  SearchOptions search;
  // Dim buckets: one plan per range of buckets.dim (each lowered with that range's max as its dim
  // hint, searched at the first execute that falls in it, with its own arena sized for the max);
  // each execute() runs the plan of the range holding the dim's value, so one runtime serves every
  // value (e.g. batch 1..16384) at close to the speed of a runtime compiled for it. Plans are
  // built on first use; bound inputs and weights move to the plan that runs (no copy of device
  // data). A value outside every range is an error.
  BucketOptions buckets;
  // Runs exactly this candidate ("key=option,..." as SearchReport::candidate prints it) instead
  // of searching; unknown keys are ignored, as are options a choice point does not offer.
  std::string candidate;
};

/// Executes a graph on one NVIDIA GPU. Built without CUDA, the constructor throws "[cuda] built
/// without CUDA".
class CudaRuntime final : public Runtime {
 public:
  explicit CudaRuntime(const Graph& g, CudaOptions opts = {});
  ~CudaRuntime() override;

  void set_device_ptr(const GraphTensor& t, void* ptr, size_t bytes) override;
  /// Output t writes its result into [ptr, ptr + bytes) of this device instead of an owned
  /// buffer (the caller owns the memory and keeps it alive while queued work may write it).
  /// `bytes` must equal the output's size at each execute. Re-registering the same pointer is a
  /// no-op; a new pointer patches the captured graph at the next execute (no stream sync when the
  /// dims are unchanged); nullptr returns to an owned buffer. get_bytes still reads it.
  void set_output_device_ptr(const GraphTensor& t, void* ptr, size_t bytes);
  /// Runs later work on `stream`, a CUstream of this device's primary context (e.g. PyTorch's
  /// current stream; nullptr is the legacy default stream), so it is ordered with that stream's
  /// work like any kernel launched there. Graphs are still captured on the runtime's own stream.
  /// Switching synchronizes the previous stream once; the same stream again costs nothing.
  void set_stream(void* stream);
  /// Runs later work on the runtime's own stream again (the default).
  void use_own_stream();
  /// Waits for queued work, then throws "[cuda] a kernel reported bad input: ..." if a kernel
  /// flagged one (an out-of-range index) since the last check. get_bytes() checks by itself;
  /// callers that only bind device memory (zero-copy) call this to learn about bad input.
  void check_errors();
  void execute(const DynMap& dyn = {}) override;
  std::vector<std::byte> get_bytes(const GraphTensor& t) override;
  Buffer remove_buffer(const GraphTensor& t) override;
  void set_buffer(const GraphTensor& t, Buffer b) override;
  std::vector<std::string> host_ops() const override;
  size_t kernel_count() const override;
  /// Streams the captured graph's steps ran on at the last capture (its parallel branches; 0
  /// before the first capture or without a graph).
  int graph_streams() const;
  /// Launches saved at the last resolve by GEMV fusion: products of one input merged into one
  /// launch (Llama's q/k/v: 2, gate/up: 1 per layer at decode; LUMINAL_GEMV_GROUP=0 turns it off)
  /// and residual Adds done by the GEMV before them (o, down: 2; LUMINAL_GEMV_RESIDUAL=0).
  int gemv_launches_saved() const;
  /// The pinned host slot of a static-shape, non-persisted input, `bytes` long (default: its
  /// static size): write the input there in place (no set_data copy) and the next execute()
  /// uploads it with every other staged input in one copy. Binds the input like set_data (consumed
  /// by execute()); waits first for the previous execute's upload to finish reading the slot. The
  /// span is valid until the next execute() or host_input() of a larger size.
  std::span<std::byte> host_input(const GraphTensor& t, size_t bytes = SIZE_MAX);
  /// Blocks until all queued work is done.
  void synchronize();
  /// Benchmarking: runs execute(dyn) `iterations` times back to back with CUDA events recorded on
  /// the stream around each call; returns each call's device time in microseconds (one sync at the
  /// end). Inputs must outlive every call: persisted, loaded, or bound with set_device_ptr.
  std::vector<double> execute_timed(const DynMap& dyn, int iterations);
  /// What the search decided (ran = false until the first execute with every input bound); with
  /// dim buckets, for the plan of the last execute's bucket.
  const SearchReport& search_report() const;
  /// The index (in CudaOptions::buckets.ranges) of the plan that runs: the last execute's bucket,
  /// or before any the one weights load into (the dim hint's, else the last); -1 without buckets.
  int active_bucket() const;
  /// The number of bucket plans built so far (0 without buckets).
  int buckets_built() const;

  /// Opaque to users (named here so the runtime's own source files can pass them around).
  struct Impl;
  struct Search;
  struct Buckets;
  struct Registered;

 protected:
  void upload(NodeId input, std::span<const std::byte> bytes, bool persist) override;
  bool load_items(const std::vector<LoadItem>& items, const LoadOptions& opts) override;

 private:
  /// The node of the plan's graph behind a node of the graph the runtime was built on (a rewrite
  /// rule's candidate runs a rebuilt graph).
  NodeId active(NodeId node) const;
  /// Runs the search (plan_search.cpp) once every input the plan reads is bound.
  void ensure_searched(const DynMap& dyn);
  /// With dim buckets: makes the plan of dyn's bucket the one that runs (buckets.cpp).
  void select_bucket(const DynMap& dyn);
  /// Gives the plan that runs now what the caller registered (external outputs, stream): after a
  /// search installs its winner or another bucket's plan takes over (external.cpp).
  void reapply_registered();
  std::unique_ptr<Search> search_;  // declared first: impl_ may run a graph it owns
  std::unique_ptr<Impl> impl_;      // the plan that runs
  std::unique_ptr<Buckets> buckets_;  // the other buckets' plans (nullptr without buckets)
  std::unique_ptr<Registered> registered_;  // what the caller registered, for every plan
};

}  // namespace luminal::cuda
