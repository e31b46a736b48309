// A built DLRM (graph path or megakernel path) plus the executable that runs it.
#pragma once

#include <memory>
#include <string>

#include "luminal/compile.h"
#include "luminal/graph.h"
#include "luminal/models/dlrm.h"

namespace dlrm {

/// A DLRM graph and its executable. Not movable: the graph's tensors point at `graph`.
struct Model {
  luminal::models::DlrmConfig config;
  luminal::Graph graph;
  luminal::models::DlrmGraph tensors;
  std::unique_ptr<luminal::Executable> runtime;
  std::string device;   // the device name it runs on ("cuda", "cpu", ...)
  bool mega = false;    // built with build_dlrm_mega
  luminal::DynMap dyn;  // dynamic dims every execute() gets (jagged bags: nnz_k)

  Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;
};

/// Builds the graph (or the one-node megakernel graph) and compiles it for `target` with
/// `options` (c.precision's tf32 becomes the compile precision; dim hints from `dyn`, the dims
/// every execute() gets; the split sparse path's graph branches come with the target's options).
/// When `persist_inputs`, dense_x, indices_* and offsets_* are persisted so one upload serves
/// every execute(). With c.dynamic_batch and max_batch > 0, batch 1..max_batch is served from
/// power-of-two dim buckets (one plan each). A precision the device cannot run is an error.
std::unique_ptr<Model> build_model(const luminal::models::DlrmConfig& c, luminal::Target target,
                                   const std::string& device, bool mega, bool persist_inputs,
                                   const luminal::DynMap& dyn, luminal::CompileOptions options,
                                   int64_t max_batch = 0);

}  // namespace dlrm
