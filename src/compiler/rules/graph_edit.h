// Graph surgery for rewrite rules: evaluate a region of a graph on the reference runtime (probe),
// and rebuild a graph with some nodes' values computed another way (the graph is append-only and
// creation order is its topological order, so a rewrite copies it rather than editing it).
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <memory>
#include <set>
#include <span>
#include <vector>

#include "luminal/tensor.h"
#include "luminal/compile.h"

namespace luminal::compiler::rules {

/// The bytes of an Input whose value is fixed when the rule runs (a lifted constant), or nullopt.
using ::luminal::ConstantLookup;

/// One region leaf and the values to give it (converted to its dtype; F32/F64/BF16/I32/I64 leaves).
struct ProbeLeaf {
  NodeId node = 0;
  std::vector<double> values;
};

/// The nodes `root` depends on, walking inputs backwards and stopping at nodes for which `stop`
/// holds (they are the region's leaves, returned sorted). The walk never passes an Input.
std::set<NodeId> region_leaves(const Graph& g, NodeId root,
                               const std::function<bool(NodeId)>& stop);

/// A concrete batch dim to evaluate at another size: in the probed copy every dim equal to `from`
/// becomes `to`, and view strides and offsets that are multiples of `from` are scaled by
/// to / from. A view that merged the batch into another dim, or a coincidental equal size, makes
/// the copy fail (out-of-bounds views are refused) or disagree: callers then probe at full size.
struct ProbeBatch {
  int64_t from = 0, to = 0;
};

/// Evaluates node `root` on the CPU reference runtime from the leaves' values alone (every path
/// from root back to an Input must end at a leaf or at an Input `constants` knows), at dims `dyn`
/// (and with `batch` substituted). Returns root's values in row-major order, or nullopt when the
/// region reads an unknown Input, a leaf has an unsupported dtype or the wrong number of values,
/// or the reference cannot evaluate the copy.
std::optional<std::vector<double>> probe(const Graph& g, NodeId root,
                                         const std::vector<ProbeLeaf>& leaves,
                                         const ConstantLookup& constants, const DynMap& dyn,
                                         std::optional<ProbeBatch> batch = std::nullopt);

/// A node whose value the rebuilt graph computes another way: `build` gets a map from old tensors
/// (node + view) to the new graph's and returns a tensor with the target's shape and dtype.
struct Replacement {
  NodeId target = 0;
  std::function<GraphTensor(Graph&, const std::function<GraphTensor(const GraphTensor&)>&)> build;
};

/// A copied graph and where each old node went.
struct Rebuilt {
  std::unique_ptr<Graph> graph;
  std::vector<NodeId> remap;  // old id -> new id (a replaced node maps to its replacement)
};

/// Copies g in creation order, emitting each replacement where its target was (its inputs are
/// the target's ancestors, already copied). Nodes only the targets used stay, as dead code. Throws
/// "[rules] two replacements of node N" when two replacements share a target.
Rebuilt rebuild(const Graph& g, const std::vector<Replacement>& replacements);

/// The tensor a node input reads: its producer seen through the input's view.
GraphTensor read(const Graph& g, const NodeInput& in);

/// `in` reads its node's whole buffer in row-major order as the dims `shape` (no offset, padding or
/// broadcast).
bool reads_whole(const Graph& g, const NodeInput& in, const std::vector<Expr>& shape);

/// The tensor `in` reads with its dim `drop` (a broadcast, e.g. a matmul operand's) removed.
GraphTensor without_dim(const Graph& g, const NodeInput& in, size_t drop);

/// t moved into the rebuilt graph (same view).
GraphTensor moved(const Rebuilt& r, const GraphTensor& t);

}  // namespace luminal::compiler::rules
