// Lookups and bags: embedding and the embedding_bag family (PyTorch EmbeddingBag semantics:
// offsets are bag starts, bags of any length, an empty bag is zeros).
#include <fmt/format.h>

#include "custom/embedding_bag/op.h"
#include "frontend/aten/jagged.h"
#include "frontend/aten/shape_util.h"
#include "luminal/nn.h"

namespace luminal::aten {

// embedding(weight, indices, padding_idx=-1, ...) = weight[indices] (any index shape).
void lower_embedding(AtenNode& n) {
  const GraphTensor w = n.tensor("weight"), idx = n.tensor("indices");
  if (w.rank() != 2) n.fail(fmt::format("weight must be 2-D, got {}", shape_string(w.dims())));
  if (!is_integer(idx.dtype))
    n.fail(fmt::format("indices must be integers, got {}", dtype_name(idx.dtype)));
  n.set_output(nn::gather_rows(w, idx));
}

// embedding_bag / _embedding_bag / _embedding_bag_forward_only (weight, indices, offsets,
// scale_grad_by_freq, mode, sparse, per_sample_weights, include_last_offset, padding_idx).
// Output 0 is the bags; the bookkeeping outputs (offset2bag, bag_size, max_indices) are not
// produced, and a graph that reads them fails at that read.
void lower_embedding_bag(AtenNode& n) {
  const GraphTensor w = n.tensor("weight");
  const std::optional<Segment> seg = n.segment("indices");
  const GraphTensor idx = seg ? seg->base : n.tensor("indices");
  if (w.rank() != 2) n.fail(fmt::format("weight must be 2-D, got {}", shape_string(w.dims())));
  if (!is_integer(idx.dtype))
    n.fail(fmt::format("indices must be integers, got {}", dtype_name(idx.dtype)));
  const int64_t mode = n.int_("mode", 0);
  if (mode != 0 && mode != 1)
    n.fail(fmt::format("mode {} is not supported (sum = 0 and mean = 1 are)",
                       mode == 2 ? "max" : std::to_string(mode)));
  const nn::BagMode bag_mode = mode == 0 ? nn::BagMode::Sum : nn::BagMode::Mean;
  const std::optional<int64_t> pad = n.opt_int("padding_idx");
  if (pad && *pad >= 0) n.fail("padding_idx is not supported");
  // per_sample_weights (a weighted KeyedJaggedTensor's weights: one key's piece is a segment of
  // the shared weights, read through the same bag bounds as the values); sum mode only, as PyTorch.
  GraphTensor weights;
  if (n.has("per_sample_weights")) {
    const std::optional<Segment> wseg = n.segment("per_sample_weights");
    if (seg.has_value() != wseg.has_value())
      n.fail("per_sample_weights must be split from the KeyedJaggedTensor like its values");
    weights = wseg ? wseg->base : n.tensor("per_sample_weights");
    if (bag_mode != nn::BagMode::Sum) n.fail("per_sample_weights need mode sum (as PyTorch)");
    if (weights.rank() != 1 || !weights.dims()[0].same(idx.dims()[0]))
      n.fail(fmt::format("per_sample_weights {} must be as long as the indices {}", shape_string(weights.dims()),
                         shape_string(idx.dims())));
    if (weights.dtype != w.dtype) weights = weights.cast(w.dtype);
  }

  if (seg) {  // one key's piece of a KeyedJaggedTensor's values: bags bounded inside the whole
    const GraphTensor offsets = n.tensor("offsets");
    if (offsets.rank() != 1 || !is_integer(offsets.dtype))
      n.fail(fmt::format("offsets must be a 1-D integer tensor, got {} {}", dtype_name(offsets.dtype),
                         shape_string(offsets.dims())));
    if (w.dtype != DType::F32 && w.dtype != DType::BF16 && w.dtype != DType::F16)
      n.fail(fmt::format("a {} table over jagged values is not supported (f32, bf16, f16 are)", dtype_name(w.dtype)));
    const GraphTensor bounds =
        segment_offsets(*seg, offsets, n.bool_("include_last_offset", false), idx.dtype);
    return n.set_output(custom::embedding_bag(w, idx, bounds, bag_mode, /*closed=*/true, weights));
  }
  if (idx.rank() == 2 && weights.graph != nullptr) n.fail("per_sample_weights with 2-D indices are not supported");
  if (idx.rank() == 2) {                               // [B, bag]: uniform bags, offsets unused
    const GraphTensor rows = nn::gather_rows(w, idx);  // [B, bag, d]
    return n.set_output(bag_mode == nn::BagMode::Sum ? rows.sum(1) : rows.mean(1));
  }
  if (idx.rank() != 1)
    n.fail(fmt::format("indices must be 1-D or 2-D, got {}", shape_string(idx.dims())));
  GraphTensor offsets = n.tensor("offsets");
  if (offsets.rank() != 1 || !is_integer(offsets.dtype))
    n.fail(fmt::format("offsets must be a 1-D integer tensor, got {} {}", dtype_name(offsets.dtype),
                       shape_string(offsets.dims())));
  if (offsets.dtype != idx.dtype) offsets = offsets.cast(idx.dtype);
  // include_last_offset: offsets has B + 1 entries and the last one closes the last bag; the bags
  // then start at the first B (the last bag ends at len(indices), as PyTorch requires it to).
  if (n.bool_("include_last_offset", false)) offsets = offsets.slice(0, 0, offsets.dims()[0] - 1);
  // One EmbeddingBag node (a kernel on CUDA); tables of other dtypes (f64) keep the ordinary ops.
  const bool op_dtype = w.dtype == DType::F32 || w.dtype == DType::BF16 || w.dtype == DType::F16;
  if (!op_dtype && weights.graph != nullptr)
    n.fail(fmt::format("per_sample_weights over a {} table are not supported (f32, bf16, f16 are)", dtype_name(w.dtype)));
  n.set_output(op_dtype ? custom::embedding_bag(w, idx, offsets, bag_mode, false, weights)
                        : nn::jagged_bag(nn::gather_rows(w, idx), offsets, bag_mode));
}

}  // namespace luminal::aten
