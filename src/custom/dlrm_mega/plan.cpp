// MegaPlan: lanes per sample, block size, shared-memory layout and register estimate for one shape.
#include "custom/dlrm_mega/plan.h"

#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "custom/dlrm_mega/op.h"

namespace luminal::custom {

int mega_row_stride(int w) {
  int ld = std::max(w, 4);
  while (ld % 8 != 4) ++ld;
  return ld;
}

namespace {

int cdiv(int a, int b) { return (a + b - 1) / b; }

int i32(int64_t v) { return static_cast<int>(v); }

// Widest output of any layer (and d), which bounds the useful lanes per sample.
int widest_output(const DlrmMegaShape& c) {
  int w = i32(c.dim());
  for (size_t i = 1; i < c.ln_bot.size(); ++i) w = std::max(w, i32(c.ln_bot[i]));
  for (size_t i = 1; i < c.ln_top.size(); ++i) w = std::max(w, i32(c.ln_top[i]));
  return w;
}

// Live floats per lane at the peak: the prefetched embedding rows (uniform: every row of every
// bag; jagged: one accumulator row per table, the bag's first row) plus one layer's accumulators.
int register_estimate(const DlrmMegaShape& c, int g) {
  const int64_t rows = c.jagged ? c.num_tables() : c.num_tables() * c.bag;
  return i32(rows) * cdiv(i32(c.dim()), g) + cdiv(widest_output(c), g);
}

// Lanes per sample: about 124 threads per SM in all (16K on an H200's 132 SMs), no more lanes than
// the widest output needs, and more when the register estimate demands it. Measured on an H200 at
// batch 2048 (lanes 4..32 x block 128/256; seed, 8-table and deep shapes): 8 lanes with 128
// threads per block was best or within 10% of the best for each.
int choose_lanes(const DlrmMegaShape& c, const DeviceCaps& caps) {
  const int64_t threads = int64_t{124} * std::max(caps.sm_count, 1);
  int g = 1;
  while (g < 32 && c.batch * g < threads && g < widest_output(c)) g *= 2;
  while (g < 32 && register_estimate(c, g) > kMegaRegisterBudget) g *= 2;
  return g;
}

// Threads per block: about one block per SM once the batch allows it, so every block's copy of the
// weights serves as many samples as possible.
int choose_block(const DlrmMegaShape& c, int g, const DeviceCaps& caps) {
  int block = std::max(128, g);
  while (block < 512 && c.batch * g >= int64_t{2} * block * std::max(caps.sm_count, 1)) block *= 2;
  return block;
}

std::string check_limits(const DlrmMegaShape& c) {
  try {
    c.validate();
  } catch (const std::exception& e) {
    return e.what();
  }
  for (size_t i = 0; i < c.ln_bot.size(); ++i) {
    if (c.ln_bot[i] > kMegaMaxWidth) {
      return fmt::format("bottom width ln_bot[{}] = {} exceeds {}", i, c.ln_bot[i], kMegaMaxWidth);
    }
  }
  for (size_t i = 1; i < c.ln_top.size(); ++i) {
    if (c.ln_top[i] > kMegaMaxWidth) {
      return fmt::format("top width ln_top[{}] = {} exceeds {}", i, c.ln_top[i], kMegaMaxWidth);
    }
  }
  if (c.num_tables() + 1 > kMegaMaxFeatures) {
    return fmt::format("{} tables exceed {}", c.num_tables(), kMegaMaxFeatures - 1);
  }
  if (!c.jagged && c.bag > kMegaMaxBag) return fmt::format("bag {} exceeds {}", c.bag, kMegaMaxBag);
  if (c.batch > (int64_t{1} << 25)) return fmt::format("batch {} exceeds 2^25", c.batch);
  return "";
}

std::string check_tuning(const MegaTuning& t) {
  if (t.lanes != 0 && (t.lanes < 1 || t.lanes > 32 || (t.lanes & (t.lanes - 1)) != 0)) {
    return fmt::format("lanes per sample must be a power of two in [1, 32], got {}", t.lanes);
  }
  if (t.block != 0 && (t.block < 32 || t.block > 1024 || t.block % 32 != 0)) {
    return fmt::format("block must be a multiple of 32 in [32, 1024], got {}", t.block);
  }
  return "";
}

// Stages layers in order while they fit the shared memory left after the per-sample rows.
void lay_out_weights(const DlrmMegaShape& c, MegaPlan& p, int budget_floats) {
  auto add = [&](const std::vector<int64_t>& ln, bool top) {
    for (size_t i = 0; i + 1 < ln.size(); ++i) {
      MegaLayer l;
      l.in = i32(ln[i]);
      l.out = i32(ln[i + 1]);
      l.top = top;
      l.index = i32(static_cast<int64_t>(i));
      l.rows = l.out;
      const int floats = l.rows * mega_row_stride(l.in);
      if (p.staged == static_cast<int>(p.layers.size()) && p.weight_floats + floats <= budget_floats) {
        l.smem = true;
        l.ld = mega_row_stride(l.in);
        l.offset = p.weight_floats;
        l.group = p.staged++;
        p.weight_floats += floats;
      } else {
        l.ld = l.in;  // global memory, PyTorch layout
      }
      p.layers.push_back(l);
    }
  };
  add(c.ln_bot, false);
  add(c.ln_top, true);
}

}  // namespace

MegaPlanResult plan_dlrm_mega(const DlrmMegaShape& c, const DeviceCaps& caps, MegaTuning t) {
  if (std::string why = check_limits(c); !why.empty()) return {std::nullopt, why};
  if (std::string why = check_tuning(t); !why.empty()) return {std::nullopt, why};
  MegaPlan p;
  p.lanes = t.lanes != 0 ? t.lanes : choose_lanes(c, caps);
  p.block = t.block != 0 ? t.block : choose_block(c, p.lanes, caps);
  if (p.block % p.lanes != 0) return {std::nullopt, fmt::format("block {} is not a multiple of {} lanes", p.block, p.lanes)};
  p.registers = register_estimate(c, p.lanes);
  if (p.registers > kMegaRegisterBudget) {
    return {std::nullopt,
            fmt::format("needs about {} live floats per lane with {} lanes per sample (budget {}); "
                        "reduce {}",
                        p.registers, p.lanes, kMegaRegisterBudget,
                        c.jagged ? "tables * d" : "tables * bag * d")};
  }
  p.grid = (c.batch * p.lanes + p.block - 1) / p.block;
  int widest_row = i32(c.ln_top[0]);
  for (int64_t w : c.ln_bot) widest_row = std::max(widest_row, i32(w));
  for (int64_t w : c.ln_top) widest_row = std::max(widest_row, i32(w));
  p.act_stride = mega_row_stride(widest_row);
  p.feat_stride = mega_row_stride(i32(c.dim()));
  p.sample_floats = 2 * p.act_stride + i32(c.num_tables() + 1) * p.feat_stride;
  const int rows_floats = (p.block / p.lanes) * p.sample_floats;
  if (rows_floats * 4 > kMegaSmemBytes) {
    return {std::nullopt, fmt::format("the per-sample rows need {} bytes of shared memory per block (budget {}); "
                                      "the interaction width d + n(n-1)/2 or n * d is too large",
                                      rows_floats * 4, kMegaSmemBytes)};
  }
  lay_out_weights(c, p, kMegaSmemBytes / 4 - rows_floats);
  p.smem_floats = p.weight_floats + rows_floats;
  return {p, ""};
}

std::string why_unsupported(const DlrmMegaShape& c, const DeviceCaps& caps) {
  return plan_dlrm_mega(c, caps).why;
}

}  // namespace luminal::custom
