// Values read from data (aten.item) and the pieces they split (KeyedJaggedTensor.to_dict's
// per-key split of its values): how the translator runs TorchRec's jagged inputs without
// data-dependent shapes.
#pragma once

#include <vector>

#include "frontend/aten/node.h"

namespace luminal::aten {

/// True when any of `sizes` mentions a value read from data (an item()'s symbol).
bool mentions_data(AtenNode& n, const std::vector<Expr>& sizes);

/// split_with_sizes of a 1-D tensor along dim 0 by sizes read from data: each piece a Segment.
void split_by_data(AtenNode& n, const GraphTensor& t, int dim, const std::vector<Expr>& sizes);

/// Bag bounds into the segment's base: offsets (relative to the segment, [B], or [B + 1] with
/// include_last_offset) moved by its start, with the last bag's end appended where it is missing:
/// [B + 1] closed offsets in `dtype`.
GraphTensor segment_offsets(const Segment& s, const GraphTensor& offsets, bool include_last_offset, DType dtype);

}  // namespace luminal::aten
