// MegaPlan: lanes per sample, shared-memory weight layout and the register estimate for one shape.
#include "custom/dlrm_mega/plan.h"

#include <algorithm>
#include <exception>

#include <fmt/format.h>

#include "custom/dlrm_mega/op.h"

namespace luminal::custom {

namespace {

int cdiv(int a, int b) { return (a + b - 1) / b; }

// Row stride >= in with stride % 8 == 4: lanes of a group reading different rows at the same k hit
// distinct banks (scalar loads) and distinct 16-byte slots of a phase (float4 loads).
int smem_row_stride(int in) {
  int ld = in;
  while (ld % 8 != 4) ++ld;
  return ld;
}

// Live floats per lane at the two peaks: bottom MLP (dense row, prefetched embedding rows, two
// layer vectors) and interaction (the n feature slices plus the first top layer's accumulators).
int register_estimate(const nn::DlrmConfig& c, int g) {
  const int sd = cdiv(static_cast<int>(c.dim()), g);
  int widest = 0;
  for (size_t i = 1; i < c.ln_bot.size(); ++i) widest = std::max(widest, cdiv(static_cast<int>(c.ln_bot[i]), g));
  for (size_t i = 1; i < c.ln_top.size(); ++i) widest = std::max(widest, cdiv(static_cast<int>(c.ln_top[i]), g));
  const int raw = static_cast<int>(c.num_tables() * c.bag) * sd;
  const int bottom = static_cast<int>(c.ln_bot[0]) + raw + 2 * widest;
  const int inter = static_cast<int>(c.num_tables() + 1) * sd + cdiv(static_cast<int>(c.ln_top[1]), g);
  return std::max(bottom, inter);
}

// Lanes per sample: enough threads to fill the GPU (about 16K), no more lanes than the widest
// vector needs, and more when the register estimate demands it.
int choose_lanes(const nn::DlrmConfig& c) {
  int widest = static_cast<int>(c.dim());
  for (size_t i = 1; i < c.ln_bot.size(); ++i) widest = std::max(widest, static_cast<int>(c.ln_bot[i]));
  for (size_t i = 1; i < c.ln_top.size(); ++i) widest = std::max(widest, static_cast<int>(c.ln_top[i]));
  int g = 1;
  while (g < 32 && c.batch * g < 16384 && g < widest) g *= 2;
  while (g < 32 && register_estimate(c, g) > kMegaRegisterBudget) g *= 2;
  return g;
}

std::string check_limits(const nn::DlrmConfig& c) {
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
  if (c.bag > kMegaMaxBag) return fmt::format("bag {} exceeds {}", c.bag, kMegaMaxBag);
  if (c.batch > (int64_t{1} << 25)) return fmt::format("batch {} exceeds 2^25", c.batch);
  return "";
}

}  // namespace

MegaPlanResult plan_dlrm_mega(const nn::DlrmConfig& c, int lanes) {
  if (std::string why = check_limits(c); !why.empty()) return {std::nullopt, why};
  if (lanes != 0 && (lanes < 1 || lanes > 32 || (lanes & (lanes - 1)) != 0)) {
    return {std::nullopt, fmt::format("lanes per sample must be a power of two in [1, 32], got {}", lanes)};
  }
  MegaPlan p;
  p.lanes = lanes != 0 ? lanes : choose_lanes(c);
  p.registers = register_estimate(c, p.lanes);
  if (p.registers > kMegaRegisterBudget) {
    return {std::nullopt, fmt::format("needs about {} live floats per lane with {} lanes per sample "
                                      "(budget {}); reduce tables * bag * d or the widths",
                                      p.registers, p.lanes, kMegaRegisterBudget)};
  }
  p.grid = (c.batch * p.lanes + p.block - 1) / p.block;
  auto add = [&](const std::vector<int64_t>& ln, bool top) {
    for (size_t i = 0; i + 1 < ln.size(); ++i) {
      MegaLayer l;
      l.in = static_cast<int>(ln[i]);
      l.out = static_cast<int>(ln[i + 1]);
      l.top = top;
      l.index = static_cast<int>(i);
      l.rows = cdiv(l.out, p.lanes) * p.lanes;
      const int floats = l.rows * smem_row_stride(l.in);
      // Stage in layer order while it fits; later layers read global memory (still L1/L2 hits).
      if (p.staged == static_cast<int>(p.layers.size()) &&
          (p.smem_floats + floats) * 4 <= kMegaSmemBytes) {
        l.smem = true;
        l.ld = smem_row_stride(l.in);
        l.offset = p.smem_floats;
        l.group = p.staged++;
        p.smem_floats += floats;
      } else {
        l.ld = l.in;
      }
      p.layers.push_back(l);
    }
  };
  add(c.ln_bot, false);
  add(c.ln_top, true);
  return {p, ""};
}

std::string why_unsupported(const nn::DlrmConfig& c) { return plan_dlrm_mega(c).why; }

}  // namespace luminal::custom
