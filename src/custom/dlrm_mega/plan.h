// The megakernel's launch and memory plan for one DLRM shape: lanes per sample, weight layout in
// shared memory, register estimate. emit.cpp turns it into CUDA source.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "luminal/nn.h"

namespace luminal::custom {

/// One dense layer of the megakernel.
struct MegaLayer {
  int in = 0, out = 0;
  bool top = false;     // top MLP (else bottom)
  int index = 0;        // position within its MLP
  bool smem = false;    // weights staged in shared memory (else read from global)
  int ld = 0;           // weight row stride where the kernel reads it
  int rows = 0;         // rows allocated in shared memory (out rounded up to the lane group)
  int offset = 0;       // float offset in shared memory
  int group = -1;       // cp.async group index (staged layers only)
};

/// How the megakernel runs one shape.
struct MegaPlan {
  int lanes = 1;                  // G: lanes per sample (power of two, divides 32)
  int block = 128;                // threads per block
  long long grid = 0;             // blocks
  std::vector<MegaLayer> layers;  // bottom layers, then top layers
  int smem_floats = 0;            // dynamic shared memory, in floats
  int staged = 0;                 // layers staged in shared memory
  int registers = 0;              // estimated live floats per lane at the peak
};

/// Limits of the megakernel design (why_unsupported names the one a shape breaks).
inline constexpr int kMegaMaxWidth = 64;          // every MLP width except the interaction width
inline constexpr int kMegaMaxFeatures = 32;       // n = 1 + tables
inline constexpr int kMegaMaxBag = 64;            // rows per bag
inline constexpr int kMegaRegisterBudget = 128;   // live floats per lane
// Dynamic shared memory for staged weights. Above 48 KB the launcher must opt in
// (CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES; the CUDA runtime does); every block copies
// its staged weights from L2, so the budget also bounds that traffic.
inline constexpr int kMegaSmemBytes = 96 * 1024;

/// The plan for a config, or the reason it does not fit the design.
struct MegaPlanResult {
  std::optional<MegaPlan> plan;
  std::string why;
};

/// Plans a validated-or-not config; never throws. lanes = 0 picks the lanes per sample; a power of
/// two in [1, 32] forces it (a tuning candidate; still checked against the register budget).
MegaPlanResult plan_dlrm_mega(const nn::DlrmConfig& c, int lanes = 0);

}  // namespace luminal::custom
