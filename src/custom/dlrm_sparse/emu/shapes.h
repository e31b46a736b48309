// The shapes the host emulation generates and checks (tag, shape); both pair paths, every format.
#pragma once

#include <vector>

#include "custom/dlrm_sparse/test_util.h"

namespace luminal::sparse_emu {

using custom::TableFormat;

/// One emulated kernel: its tag (the run_<tag> entry of the host kernels) and shape.
struct EmuShape {
  const char* tag;
  custom::DlrmSparseShape s;
};

/// s with col_align a.
inline custom::DlrmSparseShape padded(custom::DlrmSparseShape s, int64_t a) {
  s.col_align = a;
  return s;
}

/// s with closed offsets and torchrec's (upper) pair order.
inline custom::DlrmSparseShape kjt(custom::DlrmSparseShape s) {
  s.closed = true;
  s.pairs = nn::PairOrder::Upper;
  return s;
}

/// Five tables: one pair per lane; nine (or 26) tables with even d: 4x4 register tiles.
inline std::vector<EmuShape> emu_shapes() {
  using sparse_test::shape;
  const std::vector<int64_t> five{50, 3, 1000, 7, 20}, nine{50, 3, 1000, 7, 20, 9, 11, 5, 60};
  return {
      {"a", shape(37, 16, five)},
      {"b",
       shape(37, 16, five, nn::BagMode::Mean, TableFormat::RowwiseU8, DType::BF16, DType::I64)},
      {"c", shape(37, 128, five, nn::BagMode::Sum, TableFormat::Dense, DType::BF16, DType::I32)},
      {"d", shape(37, 24, five, nn::BagMode::Mean, TableFormat::Dense, DType::F32, DType::I64)},
      {"e", shape(9, 3, {5, 7}, nn::BagMode::Sum, TableFormat::RowwiseU8, DType::F32, DType::I32)},
      {"f",
       shape(37, 128, five, nn::BagMode::Mean, TableFormat::RowwiseU8, DType::F32, DType::I32)},
      {"g", shape(37, 16, nine)},
      {"h", shape(21, 128, std::vector<int64_t>(26, 40), nn::BagMode::Sum, TableFormat::Dense,
                  DType::BF16, DType::I64)},
      {"i", shape(37, 24, {50, 3, 1000, 7, 20, 9, 11}, nn::BagMode::Mean, TableFormat::RowwiseU8,
                  DType::F32, DType::I32)},
      {"j", shape(37, 3, nine)},
      {"k", padded(shape(37, 16, nine), 8)},
      {"l", padded(shape(21, 128, std::vector<int64_t>(26, 40), nn::BagMode::Sum,
                         TableFormat::Dense, DType::BF16, DType::I32),
                   16)},
      {"m", shape(9, 16, std::vector<int64_t>(33, 20), nn::BagMode::Mean, TableFormat::Dense,
                  DType::BF16, DType::I32)},  // 34 features: fp32 T, bags rounded to bf16
      // bf16 T with zero columns up to k16 (24 -> 32, 3 -> 16; d 3: no cp.async).
      {"n", shape(37, 24, five, nn::BagMode::Mean, TableFormat::Dense, DType::BF16, DType::I64)},
      {"o", shape(20, 3, {5, 7}, nn::BagMode::Sum, TableFormat::Dense, DType::BF16, DType::I32)},
      // KeyedJaggedTensor bags in torchrec's pair order, on each pair path: per lane, tiles, mma.
      {"p", kjt(shape(37, 16, five, nn::BagMode::Sum, TableFormat::Dense, DType::F32, DType::I64))},
      {"q", kjt(shape(37, 16, nine))},
      {"r", kjt(shape(21, 128, std::vector<int64_t>(26, 40), nn::BagMode::Sum, TableFormat::Dense,
                      DType::BF16, DType::I64))},
      {"s", kjt(shape(37, 24, {50, 3, 1000, 7, 20, 9, 11}, nn::BagMode::Mean, TableFormat::RowwiseU8,
                      DType::F32, DType::I32))},
  };
}

}  // namespace luminal::sparse_emu
