// DlrmMega's reference decomposition: the graph path (nn::dlrm_forward) on the op's inputs.
#include <utility>

#include "custom/dlrm_mega/op.h"

namespace luminal::custom {

DlrmMega::DlrmMega(nn::DlrmConfig config) : config_(std::move(config)) { config_.validate(); }

GraphTensor DlrmMega::decompose(Graph& g, const std::vector<GraphTensor>& inputs) const {
  (void)g;  // the inputs already live in g
  return nn::dlrm_forward(config_, nn::DlrmTensors::from_flat(config_, inputs));
}

}  // namespace luminal::custom
