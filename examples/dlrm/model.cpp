// Building the DLRM graph and its runtime for the dlrm example.
#include "model.h"

#include <regex>
#include <stdexcept>

#include <fmt/format.h>

#include "custom/dlrm_mega/op.h"
#include "luminal/reference.h"
#include "luminal/cuda.h"
#include "luminal/models/dlrm.h"

namespace dlrm {

std::string device_name(Device d) { return d == Device::Cuda ? "cuda" : "cpu"; }

namespace {

// BF16 and TF32 need sm_80+ tensor cores (and bf16 arithmetic in the generated kernels).
void require_precision(luminal::Precision p) {
  if (p == luminal::Precision::F32) return;
  const std::string dev = luminal::cuda::device_description();
  std::smatch m;
  if (std::regex_search(dev, m, std::regex("sm_([0-9]+)")) && std::stoi(m[1]) < 80) {
    throw std::runtime_error(fmt::format(
        "[dlrm] --precision {} needs an sm_80+ GPU (bf16/tf32 tensor cores); this one is {}",
        luminal::precision_name(p), dev));
  }
}

}  // namespace

void Model::synchronize() {
  if (cuda) cuda->synchronize();
}

std::unique_ptr<Model> build_model(const luminal::models::DlrmConfig& c, Device d, bool mega,
                                   bool persist_inputs, const luminal::DynMap& dyn,
                                   const luminal::SearchOptions& search,
                                   const std::string& candidate, int64_t max_batch) {
  auto m = std::make_unique<Model>();
  m->config = c;
  m->device = d;
  m->mega = mega;
  m->dyn = dyn;
  m->tensors =
      mega ? luminal::models::build_dlrm_mega(m->graph, c) : luminal::models::build_dlrm(m->graph, c);
  if (persist_inputs) {
    m->tensors.dense_x.persist();
    for (luminal::GraphTensor& t : m->tensors.indices) t.persist();
    for (luminal::GraphTensor& t : m->tensors.offsets) t.persist();
  }
  if (d == Device::Cuda) {
    if (!luminal::cuda::available()) {
      throw std::runtime_error(fmt::format("[dlrm] --device cuda: no usable GPU: {}",
                                           luminal::cuda::device_description()));
    }
    require_precision(c.precision);
    luminal::cuda::CudaOptions opts;
    opts.dim_hints = dyn;
    opts.search = search;
    opts.candidate = candidate;
    opts.precision =
        c.precision == luminal::Precision::TF32 ? c.precision : luminal::Precision::F32;
    // The split path's bags kernel reads no bottom-MLP output: let the graph run it beside them.
    if (c.sparse == luminal::models::SparsePath::Split) opts.graph_branches = 4;
    if (c.dynamic_batch && max_batch > 0)
      opts.buckets = {c.batch_symbol, luminal::pow2_buckets(1, max_batch)};
    auto rt = std::make_unique<luminal::cuda::CudaRuntime>(m->graph, opts);
    m->cuda = rt.get();
    m->runtime = std::move(rt);
  } else {
    m->runtime = std::make_unique<luminal::ReferenceRuntime>(m->graph);
  }
  return m;
}


}  // namespace dlrm
