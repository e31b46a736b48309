// A structural hash of an HLIR graph: the plan cache's key for "the same model".
#pragma once

#include <cstdint>

#include "luminal/graph.h"

namespace luminal::compiler::search {

/// A structural hash of g, stable across runs and machines: every node's kind, dtype, shape, name,
/// value, axis and persist flag, and each input (producer id and the full view: dims, strides,
/// offset, padding). Symbolic values by Expr::to_string(). Not the data.
/// A Custom node hashes its op's name() and the structure of its decomposition over inputs of the
/// node's input dims and dtypes, since CustomOp has no parameter accessor: parameters that change
/// the semantics (a bag's sum vs mean) change the hash, parameters that only change the CUDA kernel
/// (a launch layout the op derives itself) do not.
uint64_t graph_hash(const Graph& g);

}  // namespace luminal::compiler::search
