// `dlrm shard`: where a DLRM's tables would go over N GPUs (luminal/distributed.h's planner), from a
// preset (MLPerf DLRM-v2's tables and multi-hot sizes) or a weights file's table shapes. A dry run:
// executing the plan over NCCL is the multi-GPU issue's next step.
#include <cstdio>
#include <stdexcept>

#include <fmt/format.h>

#include "commands.h"
#include "inputs.h"
#include "luminal/distributed.h"
#include "luminal/models/dlrm.h"
#include "luminal/precision.h"
#include "luminal/safetensors.h"

namespace dlrm {

using luminal::models::DlrmConfig;

int shard_command(const ShardOptions& o) {
  namespace ld = luminal::distributed;
  if (o.preset.empty() == o.weights.empty())
    throw std::invalid_argument("[shard] give --preset dlrm-v2|dlrm-v2-small or --weights FILE (one of them)");
  if (o.gpus < 1) throw std::invalid_argument(fmt::format("[shard] --gpus must be at least 1, got {}", o.gpus));
  if (!(o.gpu_memory_gb > 0) || !(o.reserve_gb >= 0))
    throw std::invalid_argument(
        fmt::format("[shard] --gpu-memory {} GB and --reserve {} GB: need memory > 0, reserve >= 0", o.gpu_memory_gb,
                    o.reserve_gb));
  DlrmConfig c = o.preset.empty() ? DlrmConfig::from_weights(luminal::SafetensorsFile::open(o.weights), 1, 1)
                                  : luminal::models::dlrm_v2_preset(o.preset, 0, 1);
  c.precision = luminal::parse_precision(o.precision);
  std::vector<int64_t> hots = o.preset.empty() ? std::vector<int64_t>(c.ln_emb.size(), 1)
                                               : luminal::models::dlrm_v2_hots(o.preset);
  std::vector<double> pooling(hots.begin(), hots.end());
  if (!o.pooling.empty() && !o.inputs.empty())
    throw std::invalid_argument("[shard] give --pooling or --inputs, not both");
  if (!o.pooling.empty()) {
    if (o.pooling.size() != c.ln_emb.size())
      throw std::invalid_argument(
          fmt::format("[shard] --pooling has {} values for {} tables", o.pooling.size(), c.ln_emb.size()));
    pooling.assign(o.pooling.begin(), o.pooling.end());
  }
  if (!o.inputs.empty()) {  // measured: ids per sample of each table in a batch of real inputs
    const DlrmInputs in = load_inputs(luminal::SafetensorsFile::open(o.inputs));
    if (in.indices.size() != c.ln_emb.size())
      throw std::invalid_argument(fmt::format("[shard] {}: {} tables' ids for a model of {} tables", o.inputs,
                                              in.indices.size(), c.ln_emb.size()));
    for (size_t k = 0; k < pooling.size(); ++k) pooling[k] = double(in.indices[k].size()) / double(in.batch);
  }
  // Row bytes as stored: int8/fp8 tables are row-wise u8 codes plus an f32 scale and bias.
  const int64_t d = c.dim();
  const int64_t row_bytes = luminal::int8_tables(c.precision) ? d + 8
                            : luminal::fp32_tensors(c.precision)
                                ? 4 * d
                                : 2 * d;
  std::vector<ld::ShardTable> tables;
  int64_t table_bytes = 0;
  for (size_t k = 0; k < c.ln_emb.size(); ++k) {
    const std::string name = k < c.table_names.size() ? c.table_names[k] : luminal::models::dlrm_table_name(c, k);
    tables.push_back({name, c.ln_emb[k] * o.row_scale, d, row_bytes, pooling[k]});
    table_bytes += tables.back().bytes();
  }
  // Each GPU also holds the dense part (data-parallel) and its workspace.
  const int64_t dense = int64_t(luminal::models::dlrm_weight_bytes(c)) - [&] {
    int64_t b = 0;
    for (int64_t r : c.ln_emb) b += r * row_bytes;
    return b;
  }();
  const int64_t per_gpu = int64_t(o.gpu_memory_gb * 1e9) - int64_t(o.reserve_gb * 1e9) - dense;
  std::printf("sharding %zu tables (%s, %s, rows x %lld) over %d GPU%s of %.1f GB (%.1f GB reserved, %s of dense "
              "weights each): %s for tables per GPU\n",
              tables.size(), ld::gigabytes(table_bytes).c_str(), luminal::precision_name(c.precision).data(),
              static_cast<long long>(o.row_scale), o.gpus, o.gpus == 1 ? "" : "s", o.gpu_memory_gb, o.reserve_gb,
              ld::gigabytes(dense).c_str(), ld::gigabytes(per_gpu).c_str());
  const std::vector<int64_t> capacity(size_t(o.gpus), per_gpu);
  const ld::ShardingPlan plan = ld::plan_shards(tables, capacity);
  for (const std::string& line : plan.describe(tables, capacity)) std::printf("  %s\n", line.c_str());
  return 0;
}

}  // namespace dlrm
