// The dlrm example's inputs file: loading, validation against a DlrmConfig, and binding to a
// runtime.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "luminal/compile.h"
#include "luminal/models/dlrm.h"
#include "luminal/nn.h"
#include "luminal/runtime.h"

namespace luminal {
class SafetensorsFile;
}  // namespace luminal


namespace dlrm {

/// Host copies of an inputs file (export.py's layout): dense_x [B, n_dense] f32, indices_{k}
/// [nnz_k] (i32 or i64), offsets_{k} [B] (bag starts, PyTorch EmbeddingBag; optional: without them
/// the bags are uniform, nnz_k / B rows each) and optional expected [B, 1].
struct DlrmInputs {
  std::string path;
  int64_t batch = 0;
  int64_t dense_width = 0;
  std::optional<int64_t> uniform_bag;  // every bag of every table has this many rows
  luminal::DType file_index_dtype = luminal::DType::I32;  // dtype of indices_0 in the file
  std::vector<float> dense_x;
  std::vector<std::vector<int64_t>> indices;  // one per indices_{k} found, widened to i64
  std::vector<std::vector<int64_t>> offsets;  // one per table (b * bag when the file has none)
  std::vector<std::vector<int32_t>> indices_i32,
      offsets_i32;  // filled by prepare() for i32 configs
  std::optional<std::vector<float>> expected;
  std::vector<std::string> feature_keys;  // KJT layout: the keys of values_<key> / lengths_<key>
};

/// offsets of uniform bags: b * bag for b in [0, batch).
std::vector<int64_t> uniform_offsets(int64_t batch, int64_t bag);

/// Sets uniform_bag from indices and offsets (nullopt when any table's bags differ in size).
void detect_uniform_bags(DlrmInputs& in);

/// Reads dense_x, every consecutive indices_{k}, offsets_{k} and expected, or the KeyedJaggedTensor
/// layout (dense_features; per key values_<key>, lengths_<key>: bags in key order); infers the batch from
/// dense_x. Checks offsets (len B, offsets[0] == 0, never decreasing, never past len(indices)).
/// Throws "[dlrm] <path>: ..." on missing or mis-shaped tensors.
DlrmInputs load_inputs(const luminal::SafetensorsFile& f);

/// Checks the inputs against a config (dense width, one indices_k per table, index ranges, uniform
/// bags of c.bag unless c.jagged) and converts indices and offsets to c.index_dtype. Throws
/// "[dlrm] <path>: ..." naming the tensor.
void prepare(DlrmInputs& in, const luminal::models::DlrmConfig& c);

/// Binds dense_x, indices_* and (jagged graphs) offsets_* to the runtime in the graph's index
/// dtype.
void bind_inputs(luminal::Runtime& rt, const luminal::models::DlrmGraph& g, const DlrmInputs& in);

/// --input-mode pinned: writes every input into the CUDA runtime's pinned staging (host_input) when
/// `write`, else re-binds what is already there (inputs a producer wrote in place); execute() then
/// uploads them all with one copy.
void bind_inputs_pinned(luminal::Executable& rt, const luminal::models::DlrmGraph& g,
                        const DlrmInputs& in, bool write);

/// The first `batch` samples of `in` (dense rows, each table's bags and their indices, expected);
/// indices_i32 / offsets_i32 are left for prepare(). Throws "[dlrm] ..." unless 1 <= batch <=
/// in.batch.
DlrmInputs take_batch(const DlrmInputs& in, int64_t batch);

/// The dynamic dims of a config: nnz_k = len(indices_k) for jagged bags, and the batch when
/// c.dynamic_batch; empty for uniform bags at a fixed batch.
luminal::DynMap dyn_dims(const luminal::models::DlrmConfig& c, const DlrmInputs& in);

}  // namespace dlrm
