// Private types shared by the lowering passes (lower.cpp, matmul_match.cpp).
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "compiler/kernel_plan.h"

namespace luminal::compiler::detail {

/// What the lowering does with a node.
enum class Role : uint8_t {
  Dead,    // not needed by any Output (Inputs are never Dead)
  Inline,  // recomputed inside every kernel that reads it
  Input,   // external buffer
  Kernel,  // a root: its own generated kernel(s) write its buffer
  Output,  // an Output with its own copy / fused-chain kernel
  Alias,   // an Output whose producer writes straight into the Output's buffer
  Custom,  // a CustomStep
  Matmul,  // the result of a MatmulStep (the SumReduce, or the last node of its epilogue)
  Fused,   // computed inside a MatmulStep; nobody else reads it; no buffer
};

/// True for roles that own a plan buffer.
inline bool has_buffer(Role r) {
  return r == Role::Input || r == Role::Kernel || r == Role::Output || r == Role::Custom ||
         r == Role::Matmul;
}

/// A SumReduce recognized as a cuBLASLt matmul (buffer fields of `step` are filled in later).
struct MatmulMatch {
  MatmulStep step;
  NodeId a_node = 0, b_node = 0;   // producers read by the two operand views
  std::optional<NodeId> bias_node;  // producer of the [n] bias
  NodeId top = 0;                  // the node whose value the step writes (gets the buffer)
  std::vector<NodeId> fused;       // nodes computed by the step besides `top`
};

/// Live consumers of each node.
using Users = std::vector<std::vector<NodeId>>;

/// Matches SumReduce `sum` in the canonical matmul form (tensor.h / matmul.cpp) with operands that
/// cuBLASLt can read in place, plus an optional bias Add and ReLU epilogue. `roles` tells which
/// producers have buffers; operands that are inlined nodes are returned in `materialize` (the
/// match assumes they will get buffers). Returns nullopt when not a match or below the flop floor.
std::optional<MatmulMatch> match_matmul(const Graph& g, NodeId sum, const Users& users,
                                        const std::vector<Role>& roles, const LowerOptions& opts,
                                        std::vector<NodeId>& materialize);

/// The reduction (a Kernel-role SumReduce / MaxReduce) whose kernel can compute `root` as an
/// epilogue: `root` is an Output, or a materialized elementwise node (a Kernel-role node that is
/// no reduction, e.g. the ReLU of a small generated Linear that a library matmul reads), its
/// expression reads the reduction at the root's own index only, and nothing else needs the
/// reduction's buffer. nullopt when there is none.
std::optional<NodeId> reduction_epilogue_of(const Graph& g, NodeId root, const Users& users,
                                            const std::vector<Role>& roles);

/// A softmax denominator S = sum(exp2((x - M) * scale)) whose max M = max(x) one kernel computes
/// together with S (online softmax).
struct SoftmaxMatch {
  NodeId max = 0;      // the MaxReduce M (its kernel is replaced; its buffer stays)
  double scale = 1.0;  // c, log2(e) for exp
};

/// Matches SumReduce `sum` as the denominator of a softmax over a Kernel-role MaxReduce.
std::optional<SoftmaxMatch> match_online_softmax(const Graph& g, NodeId sum, const std::vector<Role>& roles);

/// True when the view reads all of producer `node`'s buffer in row-major order.
bool reads_whole_buffer(const Graph& g, const NodeInput& in);

}  // namespace luminal::compiler::detail
