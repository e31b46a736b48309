// Building the DLRM graph and its runtime for the dlrm example.
#include "model.h"

#include <stdexcept>

#include <fmt/format.h>

#include "custom/dlrm_mega/op.h"
#include "luminal/cpu.h"
#include "luminal/cuda.h"

namespace dlrm {

std::string device_name(Device d) { return d == Device::Cuda ? "cuda" : "cpu"; }

void Model::synchronize() {
  if (cuda) cuda->synchronize();
}

std::unique_ptr<Model> build_model(const luminal::nn::DlrmConfig& c, Device d, bool mega,
                                   bool persist_inputs) {
  auto m = std::make_unique<Model>();
  m->config = c;
  m->device = d;
  m->mega = mega;
  m->tensors =
      mega ? luminal::nn::build_dlrm_mega(m->graph, c) : luminal::nn::build_dlrm(m->graph, c);
  if (persist_inputs) {
    m->tensors.dense_x.persist();
    for (luminal::GraphTensor& t : m->tensors.indices) t.persist();
  }
  if (d == Device::Cuda) {
    if (!luminal::cuda::available()) {
      throw std::runtime_error(fmt::format("[dlrm] --device cuda: no usable GPU: {}",
                                           luminal::cuda::device_description()));
    }
    auto rt = std::make_unique<luminal::cuda::CudaRuntime>(m->graph);
    m->cuda = rt.get();
    m->runtime = std::move(rt);
  } else {
    m->runtime = std::make_unique<luminal::CpuRuntime>(m->graph);
  }
  return m;
}

std::string mega_refusal(const luminal::nn::DlrmConfig& c) {
  return luminal::custom::why_unsupported(c);
}

}  // namespace dlrm
