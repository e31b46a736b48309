// A built DLRM (graph path or megakernel path) plus the runtime that executes it.
#pragma once

#include <memory>
#include <string>

#include "luminal/graph.h"
#include "luminal/models/dlrm.h"
#include "luminal/nn.h"
#include "luminal/runtime.h"
#include "luminal/search.h"

namespace luminal::cuda {
class CudaRuntime;
}  // namespace luminal::cuda

namespace dlrm {

/// Where a model runs.
enum class Device { Cpu, Cuda };

/// "cpu" / "cuda".
std::string device_name(Device d);

/// A DLRM graph and its runtime. Not movable: the graph's tensors point at `graph`.
struct Model {
  luminal::models::DlrmConfig config;
  luminal::Graph graph;
  luminal::models::DlrmGraph tensors;
  std::unique_ptr<luminal::Runtime> runtime;
  Device device = Device::Cpu;
  bool mega = false;    // built with build_dlrm_mega
  luminal::DynMap dyn;  // dynamic dims every execute() gets (jagged bags: nnz_k)

  Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  /// Blocks until queued work is done (CUDA); a no-op on the synchronous CPU runtime.
  void synchronize();
  /// The runtime as a CudaRuntime, or nullptr (set by build_model; keeps dynamic_cast off the timed
  /// loop).
  luminal::cuda::CudaRuntime* cuda = nullptr;
};

/// Builds the graph (or the one-node megakernel graph) and its runtime (CUDA: with c.precision).
/// When `persist_inputs`, dense_x, indices_* and offsets_* are persisted so one upload serves
/// every execute(). `dyn` (jagged bags: nnz_k) is what every execute() gets, and CUDA's dim
/// hints. A precision the device cannot run is an error.
/// CUDA runs `search` at the first execute (or exactly `candidate` when given). With
/// c.dynamic_batch and max_batch > 0, CUDA serves batch 1..max_batch from power-of-two dim
/// buckets (one plan each); the CPU runtime runs the dynamic graph as it is.
std::unique_ptr<Model> build_model(const luminal::models::DlrmConfig& c, Device d, bool mega,
                                   bool persist_inputs, const luminal::DynMap& dyn = {},
                                   const luminal::SearchOptions& search = {},
                                   const std::string& candidate = "", int64_t max_batch = 0);


}  // namespace dlrm
