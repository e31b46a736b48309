// ShardedDlrm (luminal/sharded_dlrm.h): the per-rank lookup and dense programs, the weights cut
// into shards, and the exchange between them.
#include "luminal/sharded_dlrm.h"

#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "luminal/safetensors.h"

namespace luminal::distributed {

struct ShardedDlrm::Rank {
  int64_t begin = 0, end = 0;  // its samples
  // Lookup: its shards' tables, the ids of every table it holds a shard of, the pooled outputs.
  Graph lookup_graph;
  std::unique_ptr<Executable> lookup;
  std::vector<size_t> shards;  // plan indices
  std::vector<GraphTensor> shard_tables, pooled;
  std::map<int64_t, GraphTensor> indices, offsets;
  // Dense: its slice of dense_x, every shard's piece of its samples, the output.
  Graph dense_graph;
  models::DlrmConfig dense_config;  // the model at this rank's batch, bags from the pieces
  std::unique_ptr<Executable> dense;
  models::DlrmGraph model;
  std::vector<GraphTensor> pieces;  // per plan shard
};

namespace {

[[noreturn]] void fail(const std::string& why) { throw std::invalid_argument("[sharded_dlrm] " + why); }

// Binds f32 values to t in its dtype (f32, or bf16 rounded to nearest even).
void set_floats(Runtime& rt, const GraphTensor& t, std::span<const float> v) {
  if (t.dtype == DType::F32) return rt.set_data(t, v);
  const std::vector<bf16> h(v.begin(), v.end());
  rt.set_data(t, std::span<const bf16>(h));
}

void set_ids(Runtime& rt, const GraphTensor& t, const std::vector<int64_t>& v) {
  if (t.dtype == DType::I64) return rt.set_data(t, std::span<const int64_t>(v));
  const std::vector<int32_t> narrow(v.begin(), v.end());
  rt.set_data(t, std::span<const int32_t>(narrow));
}

}  // namespace

ShardedDlrm::ShardedDlrm(const models::DlrmConfig& c, std::vector<ShardTable> tables, ShardingPlan plan, int ranks,
                         const CompileRank& compile)
    : config_(c), tables_(std::move(tables)), plan_(std::move(plan)) {
  c.validate();
  if (!c.jagged) fail("needs jagged bags (offsets inputs)");
  if (int8_tables(c.precision)) fail(fmt::format("{} tables are not sharded yet (fp32, tf32, bf16)", precision_name(c.precision)));
  if (c.dynamic_batch) fail("needs a static batch");
  if (ranks < 1 || c.batch < ranks) fail(fmt::format("{} ranks for a batch of {}", ranks, c.batch));
  if (int64_t(tables_.size()) != c.num_tables()) fail(fmt::format("{} tables planned, the model has {}", tables_.size(), c.num_tables()));
  const DType act = activation_dtype(c.precision);
  for (const Shard& s : plan_.shards)
    if (s.device < 0 || s.device >= ranks) fail(fmt::format("a shard on GPU {} of {} ranks", s.device, ranks));
  for (int r = 0; r < ranks; ++r) {
    auto rank = std::make_unique<Rank>();
    rank->begin = c.batch * r / ranks, rank->end = c.batch * (r + 1) / ranks;
    // Lookup: every sample's bags over this rank's shards.
    Graph& lg = rank->lookup_graph;
    for (size_t i = 0; i < plan_.shards.size(); ++i) {
      const Shard& s = plan_.shards[i];
      if (s.device != r) continue;
      if (!rank->indices.count(s.table)) {
        rank->indices[s.table] = lg.named_tensor(fmt::format("indices_{}", s.table),
                                                 {Expr::sym(models::DlrmConfig::nnz_name(s.table))}, c.index_dtype);
        rank->offsets[s.table] = lg.named_tensor(fmt::format("offsets_{}", s.table), {c.batch}, c.index_dtype);
      }
      rank->shards.push_back(i);
      rank->shard_tables.push_back(lg.named_tensor(fmt::format("shard_{}", i), {shard_rows(s), s.col_end - s.col_begin}, act).persist());
      rank->pooled.push_back(shard_bag(s, rank->shard_tables.back(), rank->indices[s.table], rank->offsets[s.table], c.mode).output());
    }
    if (!rank->shards.empty()) rank->lookup = compile(lg, r);
    // Dense: the pieces of its samples, combined per table, then the rest of the model.
    models::DlrmConfig& dc = rank->dense_config;
    dc = c;
    dc.batch = rank->end - rank->begin;
    dc.sparse = models::SparsePath::Graph;
    Graph& dg = rank->dense_graph;
    models::DlrmTensors t = models::DlrmTensors::declare(dg, dc, /*tables=*/false);
    for (size_t i = 0; i < plan_.shards.size(); ++i) {
      const Shard& s = plan_.shards[i];
      rank->pieces.push_back(dg.named_tensor(fmt::format("piece_{}", i), {dc.batch, s.col_end - s.col_begin}, act));
    }
    for (int64_t k = 0; k < c.num_tables(); ++k) {
      std::vector<Shard> mine;
      std::vector<GraphTensor> parts;
      for (size_t i = 0; i < plan_.shards.size(); ++i)
        if (plan_.shards[i].table == k) mine.push_back(plan_.shards[i]), parts.push_back(rank->pieces[i]);
      if (mine.empty()) fail(fmt::format("table {} has no shard in the plan", k));
      t.pooled.push_back(combine_shards(mine, parts));
    }
    rank->model = {t.dense_x, {}, models::dlrm_forward(dc, t).output(), {}, t};
    rank->dense = compile(dg, r);
    ranks_.push_back(std::move(rank));
  }
}

ShardedDlrm::~ShardedDlrm() = default;

void ShardedDlrm::load(const SafetensorsFile& w) {
  const models::DlrmConfig& c = config_;
  std::vector<const SafeTensor*> files;
  for (int64_t k = 0; k < c.num_tables(); ++k) {  // every table checked before anything is bound
    const std::string name = models::dlrm_table_name(c, size_t(k)) + ".weight";
    const SafeTensor* f = w.find(name);
    if (!f || f->dtype != DType::F32 || f->shape != std::vector<int64_t>{c.ln_emb[size_t(k)], c.dim()})
      fail(fmt::format("{}: '{}' missing or not f32 [{}, {}]", w.path(), name, c.ln_emb[size_t(k)], c.dim()));
    files.push_back(f);
  }
  for (auto& rank : ranks_) {
    models::load_dlrm_weights(*rank->dense, rank->model, rank->dense_config, w);
    for (size_t j = 0; j < rank->shards.size(); ++j) {
      const Shard& s = plan_.shards[rank->shards[j]];
      const ShardTable& t = tables_[size_t(s.table)];
      const SafeTensor& f = *files[size_t(s.table)];
      std::vector<float> piece(size_t(shard_rows(s) * (s.col_end - s.col_begin)));
      copy_shard(s, t, f.data, 4, std::as_writable_bytes(std::span<float>(piece)));  // the file's f32 rows
      set_floats(*rank->lookup, rank->shard_tables[j], piece);
    }
  }
}

std::vector<float> ShardedDlrm::run(std::span<const float> dense_x, const std::vector<std::vector<int64_t>>& indices,
                                    const std::vector<std::vector<int64_t>>& offsets) {
  const models::DlrmConfig& c = config_;
  const int64_t in = c.ln_bot[0];
  if (int64_t(dense_x.size()) != c.batch * in || int64_t(indices.size()) != c.num_tables() ||
      offsets.size() != indices.size())
    fail(fmt::format("run: dense_x of {} values (want {}), {} index and {} offset lists (want {})", dense_x.size(),
                     c.batch * in, indices.size(), offsets.size(), c.num_tables()));
  // 1. Lookups: every rank pools its shards for the whole batch.
  for (auto& rank : ranks_) {
    if (!rank->lookup) continue;
    DynMap dyn;
    for (const auto& [k, t] : rank->indices) {
      set_ids(*rank->lookup, t, indices[size_t(k)]);
      set_ids(*rank->lookup, rank->offsets.at(k), offsets[size_t(k)]);
      dyn[models::DlrmConfig::nnz_name(k)] = int64_t(indices[size_t(k)].size());
    }
    rank->lookup->execute(dyn);
  }
  // 2. The exchange: each shard's rows of a rank's samples to that rank.
  exchanged_ = 0;
  const size_t es = dtype_size(activation_dtype(c.precision));
  for (auto& owner : ranks_) {
    for (size_t j = 0; j < owner->shards.size(); ++j) {
      const size_t i = owner->shards[j];
      const Shard& s = plan_.shards[i];
      const std::vector<std::byte> pooled = owner->lookup->get_bytes(owner->pooled[j]);
      const size_t row = size_t(s.col_end - s.col_begin) * es;
      for (auto& dest : ranks_) {
        const std::span<const std::byte> rows(pooled.data() + size_t(dest->begin) * row, size_t(dest->end - dest->begin) * row);
        dest->dense->set_bytes(dest->pieces[i], rows);
        if (dest != owner) exchanged_ += int64_t(rows.size());
      }
    }
  }
  // 3. Dense: every rank its samples.
  std::vector<float> out;
  for (auto& rank : ranks_) {
    rank->dense->set_data(rank->model.dense_x, dense_x.subspan(size_t(rank->begin * in), size_t((rank->end - rank->begin) * in)));
    rank->dense->execute({});
    const std::vector<float> o = rank->dense->get_f32(rank->model.out);
    out.insert(out.end(), o.begin(), o.end());
  }
  return out;
}

}  // namespace luminal::distributed
