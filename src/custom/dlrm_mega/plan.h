// The megakernel's launch and memory plan for one DLRM shape: lanes per sample, block size,
// shared-memory layout (staged weights, then per-sample rows), register estimate. emit.cpp turns
// it into CUDA source.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "custom/dlrm_mega/shape.h"
#include "luminal/device.h"

namespace luminal::custom {

/// One dense layer of the megakernel.
struct MegaLayer {
  int in = 0, out = 0;
  bool top = false;     // top MLP (else bottom)
  int index = 0;        // position within its MLP
  bool smem = false;    // weights staged in shared memory (else read from global)
  int ld = 0;           // weight row stride where the kernel reads it
  int rows = 0;         // rows allocated in shared memory (= out)
  int offset = 0;       // float offset in shared memory
  int group = -1;       // cp.async group index (staged layers only)
};

/// How the megakernel runs one shape.
struct MegaPlan {
  int lanes = 1;                  // G: lanes per sample (power of two, divides 32)
  int block = 128;                // threads per block
  long long grid = 0;             // blocks
  std::vector<MegaLayer> layers;  // bottom layers, then top layers
  int weight_floats = 0;          // staged weights at the start of shared memory
  int act_stride = 0;             // AW: floats per activation row (two per sample, ping-pong)
  int feat_stride = 0;            // DP: floats per interaction feature row (n per sample)
  int sample_floats = 0;          // 2 * AW + n * DP: one sample's rows, after the weights
  int smem_floats = 0;            // dynamic shared memory in all, in floats
  int staged = 0;                 // layers staged in shared memory
  int registers = 0;              // estimated live floats per lane at the peak
};

/// Tuning knobs of the megakernel (0 = choose automatically); each setting is a kernel candidate.
struct MegaTuning {
  int lanes = 0;  // lanes per sample: a power of two in [1, 32]
  int block = 0;  // threads per block: a multiple of 32 and of lanes, at most 1024
};

/// Limits of the megakernel design (why_unsupported names the one a shape breaks).
inline constexpr int kMegaMaxWidth = 64;          // every MLP width except the interaction width
inline constexpr int kMegaMaxFeatures = 32;       // n = 1 + tables
inline constexpr int kMegaMaxBag = 64;            // rows per uniform bag (jagged bags: any)
inline constexpr int kMegaRegisterBudget = 128;   // live floats per lane
// Dynamic shared memory for staged weights. Above 48 KB the launcher must opt in
// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; the CUDA runtime does); every block copies
// its staged weights from L2, so the budget also bounds that traffic.
inline constexpr int kMegaSmemBytes = 160 * 1024;

/// The plan for a config, or the reason it does not fit the design.
struct MegaPlanResult {
  std::optional<MegaPlan> plan;
  std::string why;
};

/// Plans a validated-or-not shape for a device; never throws. Forced tuning values are still
/// checked.
MegaPlanResult plan_dlrm_mega(const DlrmMegaShape& c, const DeviceCaps& caps, MegaTuning t = {});

/// Row stride for shared memory: >= w, a multiple of 4, and == 4 (mod 8), so lanes reading
/// different rows at one column hit distinct banks (scalar) or 16-byte slots of a phase (float4).
int mega_row_stride(int w);

}  // namespace luminal::custom
