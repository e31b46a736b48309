// The DLRM's fused sparse path: every table's bags and the dot interaction as one DlrmSparse node
// (Fused), or as a bags-only DlrmSparse node beside the bottom MLP plus a DlrmSparseFinish (Split).
#include "models/dlrm/dlrm_fused.h"

#include <memory>

#include "custom/dlrm_sparse/op.h"
#include "luminal/models/dlrm.h"

namespace luminal::models {

GraphTensor fused_sparse(const DlrmConfig& c, const DlrmTensors& t, const GraphTensor& x) {
  const bool int8 = int8_tables(c.precision);
  custom::DlrmSparseShape s;
  s.batch = c.batch;
  s.dynamic_batch = c.dynamic_batch;
  s.batch_symbol = c.batch_symbol;
  s.dim = c.dim();
  s.rows = c.ln_emb;
  s.mode = c.mode;
  s.format = int8 ? custom::TableFormat::RowwiseU8 : custom::TableFormat::Dense;
  s.dtype = activation_dtype(c.precision);
  s.index_dtype = c.index_dtype;
  s.col_align = custom::kSparseColAlign;  // top_input_width(): the first top weight is padded to match
  s.bags_only = c.sparse == SparsePath::Split;
  s.pairs = c.pairs;  // the split path takes the lower order only (DlrmSparseShape::validate says so)
  std::vector<GraphTensor> in;
  if (!s.bags_only) in.push_back(x);
  for (size_t k = 0; k < t.tables.size(); ++k) {
    in.push_back(t.tables[k]);
    if (int8) in.push_back(t.scale_bias[k]);
    in.push_back(t.indices[k]);
    in.push_back(t.offsets[k]);
  }
  if (!s.bags_only) return custom_op(std::make_shared<custom::DlrmSparse>(std::move(s)), in);
  // Split: the bags kernel does not read x, so it runs beside the bottom MLP (graph branches).
  const GraphTensor bags = custom_op(std::make_shared<custom::DlrmSparse>(s), in);
  return custom_op(std::make_shared<custom::DlrmSparseFinish>(std::move(s)), {x, bags});
}

}  // namespace luminal::models
