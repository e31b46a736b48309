// The dlrm example's inputs file: loading, validation against a DlrmConfig, and binding to a
// runtime.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "luminal/nn.h"
#include "luminal/runtime.h"

namespace luminal {
class SafetensorsFile;
}  // namespace luminal

namespace dlrm {

/// Host copies of an inputs file (export.py's layout): dense_x [B, n_dense] f32, indices_{k} [B *
/// bag] (i32 or i64), optional offsets_{k} [B] and expected [B, 1].
struct DlrmInputs {
  std::string path;
  int64_t batch = 0;
  int64_t bag = 1;
  int64_t dense_width = 0;
  luminal::DType file_index_dtype = luminal::DType::I32;  // dtype of indices_0 in the file
  std::vector<float> dense_x;
  std::vector<std::vector<int64_t>> indices;      // one per indices_{k} found, widened to i64
  std::vector<std::vector<int32_t>> indices_i32;  // filled by prepare() when the config wants i32
  std::optional<std::vector<float>> expected;
};

/// Reads dense_x, every consecutive indices_{k} and expected; infers batch and bag from dense_x
/// rows and len(indices_0). Checks offsets_{k} when present (uniform bags: offsets_k[b] == b *
/// bag). Throws "[dlrm] <path>: ..." on missing or mis-shaped tensors.
DlrmInputs load_inputs(const luminal::SafetensorsFile& f);

/// Checks the inputs against a config (dense width, one indices_k per table, counts, index ranges)
/// and converts the indices to c.index_dtype. Throws "[dlrm] <path>: ..." naming the tensor.
void prepare(DlrmInputs& in, const luminal::nn::DlrmConfig& c);

/// Binds dense_x and indices_* to the runtime (set_data in the config's index dtype).
void bind_inputs(luminal::Runtime& rt, const luminal::nn::DlrmGraph& g, const DlrmInputs& in);

/// max |a - b| over equal-length vectors (NaN anywhere gives NaN).
double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b);

}  // namespace dlrm
