// The sharding planner (include/luminal/distributed.h). Three passes, each deterministic:
// row-wise for tables no GPU can hold, column-wise for tables hot enough to unbalance one GPU,
// then a greedy table-wise placement over two resources (memory and lookup bytes), the piece
// with the largest share of either first, each where it leaves the smallest share.
#include "luminal/distributed.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace luminal::distributed {

namespace {

[[noreturn]] void fail(const std::string& why) { throw std::invalid_argument("[shard] " + why); }

double load_of(const ShardTable& t, int64_t rows, int64_t cols) {
  return t.pooling * double(t.row_bytes) * (double(rows) / double(t.rows)) * (double(cols) / double(t.dim));
}

std::string capacities(const std::vector<int64_t>& cap) {
  std::vector<std::string> s;
  for (int64_t c : cap) s.push_back(gigabytes(c));
  return fmt::format("{}", fmt::join(s, ", "));
}

void check(const std::vector<ShardTable>& tables, const std::vector<int64_t>& capacity, const ShardOptions& o) {
  if (capacity.empty()) fail("no GPUs to place the tables on");
  for (size_t g = 0; g < capacity.size(); ++g)
    if (capacity[g] <= 0) fail(fmt::format("GPU {} has {} bytes for tables", g, capacity[g]));
  if (o.min_column_width < 8 || o.min_column_width % 8 != 0)
    fail(fmt::format("min_column_width must be a positive multiple of 8, got {}", o.min_column_width));
  for (const ShardTable& t : tables)
    if (t.rows <= 0 || t.dim <= 0 || t.row_bytes <= 0 || !(t.pooling >= 0) || !std::isfinite(t.pooling))
      fail(fmt::format("table '{}' is {} x {} with {} bytes per row and {} lookups per sample", t.name, t.rows,
                       t.dim, t.row_bytes, t.pooling));
}

struct State {
  const std::vector<ShardTable>& tables;
  const std::vector<int64_t>& capacity;
  ShardingPlan plan;
  double fair_load;  // total lookup bytes / GPUs

  void add(Shard s) {
    plan.device_bytes[size_t(s.device)] += s.bytes;
    plan.device_load[size_t(s.device)] += s.load;
    plan.shards.push_back(s);
  }
  int64_t free_on(int g) const { return capacity[size_t(g)] - plan.device_bytes[size_t(g)]; }

  // Rows of table t over every GPU with room, in proportion to its free memory; false if they do
  // not fit.
  bool place_row_wise(int64_t t) {
    const ShardTable& tb = tables[size_t(t)];
    const int n = int(capacity.size());
    std::vector<int64_t> room(static_cast<size_t>(n), 0), rows(static_cast<size_t>(n), 0);
    for (int g = 0; g < n; ++g) room[size_t(g)] = std::max<int64_t>(0, free_on(g)) / tb.row_bytes;
    const long double total = std::accumulate(room.begin(), room.end(), 0.0L);
    if (total < (long double)tb.rows) return false;
    int64_t placed = 0;
    for (int g = 0; g < n; ++g) placed += rows[size_t(g)] = int64_t((long double)tb.rows * room[size_t(g)] / total);
    for (int g = 0; placed < tb.rows; g = (g + 1) % n)  // the remainder (< n rows), one per GPU with room
      if (rows[size_t(g)] < room[size_t(g)]) ++rows[size_t(g)], ++placed;
    int64_t begin = 0;
    for (int g = 0; g < n; ++g) {
      if (rows[size_t(g)] == 0) continue;
      const int64_t r = rows[size_t(g)];
      add({t, Placement::RowWise, g, begin, begin + r, 0, tb.dim, r * tb.row_bytes, load_of(tb, r, tb.dim)});
      begin += r;
    }
    return true;
  }
};

// A table-wise or column-wise piece waiting for its GPU.
struct Piece {
  int64_t table, col_begin, col_end;
  int64_t bytes;
  double load;
  Placement placement;
};

}  // namespace

const char* placement_name(Placement p) {
  switch (p) {
    case Placement::TableWise: return "table-wise";
    case Placement::RowWise: return "row-wise";
    case Placement::ColumnWise: return "column-wise";
  }
  return "?";
}

std::string gigabytes(int64_t bytes) { return fmt::format("{:.2f} GB", double(bytes) / 1e9); }

ShardingPlan plan_shards(const std::vector<ShardTable>& tables, const std::vector<int64_t>& capacity,
                         const ShardOptions& options) {
  check(tables, capacity, options);
  const int n = int(capacity.size());
  int64_t total_bytes = 0, total_capacity = 0;
  double total_load = 0;
  for (const ShardTable& t : tables) total_bytes += t.bytes(), total_load += load_of(t, t.rows, t.dim);
  for (int64_t c : capacity) total_capacity += c;
  if (total_bytes > total_capacity)
    fail(fmt::format("the tables need {}; {} GPU{} hold{} {} for tables ({})", gigabytes(total_bytes), n,
                     n == 1 ? "" : "s", n == 1 ? "s" : "", gigabytes(total_capacity), capacities(capacity)));
  State st{tables, capacity, {}, total_load / n};
  st.plan.device_bytes.assign(size_t(n), 0);
  st.plan.device_load.assign(size_t(n), 0.0);

  // 1. Tables no GPU can hold: row-wise, largest first.
  std::vector<int64_t> order(tables.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return tables[size_t(a)].bytes() > tables[size_t(b)].bytes(); });
  const int64_t largest = *std::max_element(capacity.begin(), capacity.end());
  std::vector<bool> done(tables.size(), false);
  for (int64_t t : order) {
    if (tables[size_t(t)].bytes() <= largest) continue;
    if (!st.place_row_wise(t))
      fail(fmt::format("table '{}' ({}) does not fit the free memory left on the GPUs ({})", tables[size_t(t)].name,
                       gigabytes(tables[size_t(t)].bytes()), capacities(capacity)));
    done[size_t(t)] = true;
  }

  // 2. Pieces: whole tables, or column ranges (multiples of 8 columns) of the hot ones.
  std::vector<Piece> pieces;
  for (int64_t t = 0; t < int64_t(tables.size()); ++t) {
    if (done[size_t(t)]) continue;
    const ShardTable& tb = tables[size_t(t)];
    const double load = load_of(tb, tb.rows, tb.dim);
    int64_t k = 1;
    if (n > 1 && tb.dim % 8 == 0 && st.fair_load > 0 && load > st.fair_load)
      k = std::min<int64_t>({n, int64_t(std::ceil(load / st.fair_load)), tb.dim / options.min_column_width});
    if (k < 2) {
      pieces.push_back({t, 0, tb.dim, tb.bytes(), load, Placement::TableWise});
      continue;
    }
    const int64_t units = tb.dim / 8;
    int64_t begin = 0;
    for (int64_t i = 0; i < k; ++i) {
      const int64_t w = 8 * (units / k + (i < units % k ? 1 : 0));
      // Row bytes split in proportion to the columns (an int8 row's scale and bias go with each).
      const int64_t bytes = tb.rows * (tb.row_bytes * w / tb.dim);
      pieces.push_back({t, begin, begin + w, bytes, load_of(tb, tb.rows, w), Placement::ColumnWise});
      begin += w;
    }
  }

  // 3. Largest share (of all bytes or of all lookups) first; each on the GPU where the larger of
  // its memory use and its lookup load (relative to capacity and fair share) ends lowest.
  const auto share = [&](const Piece& p) {
    return std::max(double(p.bytes) / double(total_capacity), total_load > 0 ? p.load / total_load : 0.0);
  };
  std::stable_sort(pieces.begin(), pieces.end(), [&](const Piece& a, const Piece& b) { return share(a) > share(b); });
  for (const Piece& p : pieces) {
    const ShardTable& tb = tables[size_t(p.table)];
    int best = -1;
    double best_score = 0;
    for (int pass = 0; pass < 2 && best < 0; ++pass)  // pass 0: a column piece avoids GPUs holding its table
      for (int g = 0; g < n; ++g) {
        if (st.free_on(g) < p.bytes) continue;
        const bool holds = std::any_of(st.plan.shards.begin(), st.plan.shards.end(),
                                       [&](const Shard& s) { return s.table == p.table && s.device == g; });
        if (pass == 0 && holds) continue;
        const double mem = double(st.plan.device_bytes[size_t(g)] + p.bytes) / double(capacity[size_t(g)]);
        const double lookups = st.fair_load > 0 ? (st.plan.device_load[size_t(g)] + p.load) / st.fair_load : 0.0;
        const double score = std::max(mem, lookups);
        if (best < 0 || score < best_score) best = g, best_score = score;
      }
    if (best >= 0) {
      st.add({p.table, p.placement, best, 0, tb.rows, p.col_begin, p.col_end, p.bytes, p.load});
    } else if (p.placement == Placement::TableWise && st.place_row_wise(p.table)) {
      // Fits no GPU whole any more, but in row ranges over the free memory left.
    } else {
      std::vector<int64_t> left;
      for (int g = 0; g < n; ++g) left.push_back(st.free_on(g));
      fail(fmt::format("table '{}' ({}{}) fits on no GPU: free for tables {} (of {})", tb.name, gigabytes(p.bytes),
                       p.placement == Placement::ColumnWise ? ", a column range" : "", capacities(left),
                       capacities(capacity)));
    }
  }
  std::stable_sort(st.plan.shards.begin(), st.plan.shards.end(), [](const Shard& a, const Shard& b) {
    return std::tie(a.table, a.row_begin, a.col_begin) < std::tie(b.table, b.row_begin, b.col_begin);
  });
  return st.plan;
}

std::vector<std::string> ShardingPlan::describe(const std::vector<ShardTable>& tables,
                                                const std::vector<int64_t>& capacity) const {
  std::vector<std::string> lines;
  double total_load = 0;
  for (double l : device_load) total_load += l;
  for (size_t i = 0; i < shards.size();) {
    const Shard& first = shards[i];
    const ShardTable& t = tables[size_t(first.table)];
    std::vector<std::string> where;
    for (; i < shards.size() && shards[i].table == first.table; ++i) {
      const Shard& s = shards[i];
      if (s.placement == Placement::TableWise) where.push_back(fmt::format("on GPU {}", s.device));
      else if (s.placement == Placement::RowWise)
        where.push_back(fmt::format("rows [{}, {}) on GPU {}", s.row_begin, s.row_end, s.device));
      else
        where.push_back(fmt::format("columns [{}, {}) on GPU {}", s.col_begin, s.col_end, s.device));
    }
    lines.push_back(fmt::format("{}: {} x {}, {}, {:g} lookups/sample: {} {}", t.name, t.rows, t.dim,
                                gigabytes(t.bytes()), t.pooling, placement_name(first.placement),
                                fmt::join(where, ", ")));
  }
  for (size_t g = 0; g < device_bytes.size(); ++g)
    lines.push_back(fmt::format("GPU {}: {} of {} for tables, {:.1f}% of the lookup bytes", g,
                                gigabytes(device_bytes[g]), gigabytes(g < capacity.size() ? capacity[g] : 0),
                                total_load > 0 ? 100.0 * device_load[g] / total_load : 0.0));
  return lines;
}

}  // namespace luminal::distributed
