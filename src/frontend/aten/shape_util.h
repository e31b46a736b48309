// Shape helpers shared by the translator's op families.
#pragma once

#include <vector>

#include "frontend/aten/node.h"

namespace luminal::aten {

/// dim in [-rank, rank) -> [0, rank), or n.fail naming the argument.
int norm_dim(const AtenNode& n, int64_t dim, int rank, const char* arg = "dim");
/// t without its size-1 axis `axis` (a view; a copy only when that axis may hold padding).
GraphTensor drop_unit_dim(const GraphTensor& t, int axis);
/// t reshaped to `dims` (a view when t is contiguous, else a row-major copy first).
GraphTensor reshape_to(const GraphTensor& t, const std::vector<Expr>& dims);
/// Python slice bounds on a dim of `size`: negative values count from the end, then clamp to
/// [0, size] (end = INT64_MAX means "to the end").
Expr clamp_bound(const Expr& v, const Expr& size);

}  // namespace luminal::aten
