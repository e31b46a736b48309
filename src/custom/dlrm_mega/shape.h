// The shape DlrmMega is built for: a DLRM's widths, tables and bags in fp32 (the op's own struct;
// the DLRM model and the DLRM rule convert theirs into it).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "luminal/nn.h"

namespace luminal::custom {

/// One fp32 DLRM forward: bottom MLP widths ln_bot (ln_bot.back() = d), table vocab sizes ln_emb,
/// top widths ln_top (ln_top[0] = d + n(n-1)/2 with n = 1 + tables, ln_top.back() = 1), the batch
/// (or the dynamic dim batch_symbol, read at run time), and uniform bags of `bag` rows or jagged
/// bags (offsets_k [B], indices_k [nnz_k]).
struct DlrmMegaShape {
  std::vector<int64_t> ln_bot, ln_emb, ln_top;
  int64_t batch = 0;  // with dynamic_batch: a typical value (the kernel reads the real one)
  int64_t bag = 1;    // uniform bags only
  DType index_dtype = DType::I32;
  bool jagged = false;
  nn::BagMode mode = nn::BagMode::Sum;
  bool dynamic_batch = false;
  std::string batch_symbol = "batch";
  /// Embedding dim d (ln_bot.back()).
  int64_t dim() const { return ln_bot.empty() ? 0 : ln_bot.back(); }
  /// Number of tables.
  int64_t num_tables() const { return static_cast<int64_t>(ln_emb.size()); }
  /// The batch dim of dense_x and the output: the symbol when dynamic_batch, else `batch`.
  Expr batch_dim() const { return dynamic_batch ? Expr::sym(batch_symbol) : Expr(batch); }
  /// Throws "[dlrm] ..." on an inconsistent shape (widths, interaction width, batch, bag, dtypes).
  void validate() const;
};

/// DlrmMega's inputs split by role (the op's flat order: dense_x, indices_k, offsets_k (jagged),
/// tables, bottom (weight, bias) pairs, top pairs), each checked against the shape.
struct DlrmMegaInputs {
  GraphTensor dense_x;
  std::vector<GraphTensor> indices, offsets, tables, bot_w, bot_b, top_w, top_b;
  /// Splits and checks a flat list (count, dims, dtypes); throws "[dlrm] input '...' is ...".
  static DlrmMegaInputs split(const DlrmMegaShape& s, const std::vector<GraphTensor>& flat);
};

/// The fp32 DLRM forward on split inputs from nn layers (DlrmMega's reference decomposition):
/// relu(linear) bottom layers, bags (uniform sums/means, or nn::jagged_bag), nn::dot_interaction,
/// relu(linear) top layers, sigmoid of the last. Returns [B, 1] f32.
GraphTensor dlrm_mega_forward(const DlrmMegaShape& s, const DlrmMegaInputs& in);

}  // namespace luminal::custom
