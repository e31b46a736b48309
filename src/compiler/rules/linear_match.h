// Structural matchers shared by the rules over dense layers (cross_layer, mlp_chain): the canonical
// 2-D matmul y = x W^T (SumReduce over k of Mul(x[M, 1, k], W^T[1, n, k]), as nn::Linear and the
// PyTorch frontend build it), a Linear layer's bias and ReLU after it, and the DCNv2 cross step
// x0 * (u W^T + b) + x_l (torchrec's LowRankCrossNet, nn::low_rank_cross).
#pragma once

#include <optional>
#include <vector>

#include "compiler/rules/graph_edit.h"

namespace luminal::compiler::rules {

/// Every node's users, by node id.
using Users = std::vector<std::vector<NodeId>>;
/// The users of every node of g.
Users users_of(const Graph& g);

/// A 2-D matmul of constant n and k: its SumReduce, operands as old-graph tensors (x [M, k], W
/// [n, k]), and x's producer when x reads it whole as [M, k] row-major.
struct MatmulFound {
  NodeId sum = 0;
  GraphTensor x, w;
  std::optional<NodeId> x_node;
  int64_t n = 0, k = 0;
};
/// The matmul whose SumReduce is `sum` (its Mul read by nothing else), or nullopt.
std::optional<MatmulFound> match_matmul_2d(const Graph& g, const Users& users, NodeId sum);

/// `top` + b[n] (b broadcast along M): the Add and b as an old-graph tensor, when the Add is top's
/// only user.
std::optional<std::pair<NodeId, GraphTensor>> match_bias(const Graph& g, const Users& users, NodeId top);

/// relu(top) = Mul(top, Cast(LessThan(0, top))), each read whole: the Mul.
std::optional<NodeId> match_relu(const Graph& g, const Users& users, NodeId top);

/// A cross step's operands, the node holding x_{l+1}, and u's producer when u reads it whole.
struct CrossFound {
  NodeId root = 0;
  GraphTensor u, w, b, x0, xl;
  std::optional<NodeId> u_node;
};
/// The cross step x0 * (u W^T + b) + x_l whose matmul is SumReduce `sum` (each node the only user
/// of the one before; x0 and x_l read whole; one dtype throughout), or nullopt.
std::optional<CrossFound> match_cross(const Graph& g, const Users& users, NodeId sum);

}  // namespace luminal::compiler::rules
