// DlrmMega's reference decomposition: the fp32 DLRM forward from nn layers on the op's inputs.
#include <utility>

#include "custom/dlrm_mega/op.h"

namespace luminal::custom {

DlrmMega::DlrmMega(DlrmMegaShape shape) : config_(std::move(shape)) { config_.validate(); }

GraphTensor DlrmMega::decompose(Graph& g, const std::vector<GraphTensor>& inputs) const {
  (void)g;  // the inputs already live in g
  return dlrm_mega_forward(config_, DlrmMegaInputs::split(config_, inputs));
}

}  // namespace luminal::custom
