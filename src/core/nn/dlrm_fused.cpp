// The DLRM's fused sparse path: every table's bags and the dot interaction as one DlrmSparse node.
#include "dlrm_fused.h"

#include <stdexcept>

namespace luminal::nn {

GraphTensor fused_sparse(const DlrmConfig& c, const DlrmTensors& t, const GraphTensor& x) {
  (void)c, (void)t, (void)x;
  throw std::invalid_argument(
      "[dlrm] the fused sparse path needs custom::DlrmSparse (branch sparse, not merged yet): use "
      "sparse = graph");
}

}  // namespace luminal::nn
