// A DLRM whose tables are sharded over several devices (luminal/distributed.h's plan), driven by
// one process as TorchRec inference does: per rank a lookup program (its shards' bags for the
// whole batch) and a dense program (its slice of the batch: every table's pieces combined, then
// the bottom MLP, the interaction and the top MLP), and between them the exchange that moves each
// shard's pooled rows to the rank owning those samples.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "luminal/compile.h"
#include "luminal/distributed.h"
#include "luminal/models/dlrm.h"

namespace luminal {
class SafetensorsFile;
}

namespace luminal::distributed {

/// Rank r's executable for a graph (the backend of its device).
using CompileRank = std::function<std::unique_ptr<Executable>(const Graph& g, int rank)>;

/// A jagged DLRM (fp32, tf32 or bf16 tables; dot or cross interaction) over `ranks` ranks. The
/// exchange copies through host memory (CPU ranks; on GPUs it is NCCL's all-to-all, not built yet).
class ShardedDlrm {
 public:
  /// Builds and compiles every rank's programs for c (c.batch samples per call, split evenly
  /// over the ranks) and `plan` (over `tables`, as plan_shards returned it).
  ShardedDlrm(const models::DlrmConfig& c, std::vector<ShardTable> tables, ShardingPlan plan, int ranks,
              const CompileRank& compile);
  ~ShardedDlrm();
  ShardedDlrm(const ShardedDlrm&) = delete;
  ShardedDlrm& operator=(const ShardedDlrm&) = delete;

  /// Binds the weights from an fp32 file under c's names: the dense ones on every rank, each
  /// table cut into its shards on their ranks. Checks every table's name and shape first.
  void load(const SafetensorsFile& w);

  /// One batch: dense_x [batch, ln_bot[0]] and per table its ids and offsets [batch] (open);
  /// returns the model's output [batch] (f32).
  std::vector<float> run(std::span<const float> dense_x, const std::vector<std::vector<int64_t>>& indices,
                         const std::vector<std::vector<int64_t>>& offsets);

  /// Bytes moved by the last run's exchange between different ranks.
  int64_t exchanged_bytes() const { return exchanged_; }

 private:
  struct Rank;
  models::DlrmConfig config_;
  std::vector<ShardTable> tables_;
  ShardingPlan plan_;
  std::vector<std::unique_ptr<Rank>> ranks_;
  int64_t exchanged_ = 0;
};

}  // namespace luminal::distributed
