// The CUDA backend: NVRTC-generated kernels, cuBLASLt matmuls and whole-plan CUDA graphs on one
// NVIDIA GPU. Compile a graph for it with compile(g, cuda::backend(options)) (luminal/compile.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "luminal/backend.h"

namespace luminal::cuda {

/// True when built with CUDA and a device is present.
bool available();
/// "NVIDIA H200 (sm_90)", or why there is no device.
std::string device_description();

/// The GEMV kernel that decode-shaped matmuls (m <= 8) run instead of cuBLASLt (bench/gemv_bench.cpp
/// sweeps the knobs).
struct GemvOptions {
  bool enabled = true;  // false: every matmul on cuBLASLt (LUMINAL_GEMV=0 at the boundary)
  int loads = 4;        // 16-byte weight loads in flight per lane: 2, 4, 8 or 16
  int splits = 0;       // warps per output column: 1, 2, 4 or 8 (0: chosen per shape)
  bool group = true;    // products of one input (Llama's q/k/v, gate/up) in one launch
  bool residual = true;  // a GEMV writes the residual Add that follows it
};

/// Options of the CUDA backend: what changes the plans it builds is in options_key() (and so in
/// the plan-cache key).
struct CudaOptions {
  int device = 0;           // the device ordinal
  bool cuda_graph = true;   // capture each plan as one CUDA graph
  // Most streams the captured graph spreads independent steps over (parallel branches; 1 = one
  // chain in plan order, the default: the default DLRM plans are one chain anyway). The DLRM split
  // sparse path asks for 4.
  int graph_branches = 1;
  // With branches: the stream of the chain with the most steps (DLRM's bottom MLP) captured at the
  // highest stream priority, the others at the lowest, and the graph run by its nodes' priorities,
  // so the chain's kernels take SMs ahead of a wide kernel beside it (the bags) as blocks retire.
  bool branch_priorities = false;
  // Each new cuBLASLt matmul shape times the heuristic's top 8 algorithms once on the device (in
  // isolation) and keeps the fastest (unless within 3% of the heuristic's first). Off: on the
  // H200 the isolated timings picked algorithms that ran slower inside the plan (docs/results/
  // history.md, 2026-12-03 runtime section); timing whole plans is the search's job.
  bool matmul_autotune = false;
  // Precision fp8: a GEMM that qualifies runs on e4m3 only where quantizing its activations plus
  // the e4m3 GEMM timed faster than the bf16 GEMM at the shape's first run (kept per process);
  // false: wherever it qualifies (tests, comparisons). On an H100 the separate quantization pass
  // costs more than the e4m3 GEMM saves at DLRM's shapes (docs/benchmarks.md, 2026-12-07).
  bool fp8_timed = true;
  GemvOptions gemv;
  // The staged host-input copy as a node of the captured graph (else one copy before it).
  bool staged_in_graph = false;
  // Fill outputs and intermediates with 0xFF before every run (debugging stale reads).
  bool poison = false;
};

/// Process-wide settings of the CUDA backend (the driver is loaded and the JIT cache opened once
/// per process).
struct CudaEnvironment {
  std::string driver_library;             // "" : libcuda.so.1 (a test double, a driver elsewhere)
  std::vector<std::string> include_dirs;  // NVRTC include dirs tried before the toolkit's
  bool jit_disk_cache = true;             // compiled kernels on disk, LUMINAL_CACHE_DIR/jit
};

/// Sets them; call before the first CUDA use. Throws "[cuda] ..." when the driver or the JIT
/// cache was already opened with other settings.
void set_environment(const CudaEnvironment& env);

/// The CUDA backend for these options. Throws "[cuda] built without CUDA" without the toolkit,
/// "[cuda] no device ..." without a GPU, and "[cuda] ..." for bad options (a gemv knob outside
/// its values, graph_branches < 1).
std::shared_ptr<const Backend> backend(const CudaOptions& options = {});

}  // namespace luminal::cuda
