// The DLRM rule's matcher: finds facebookresearch/dlrm's DLRM_Net forward (bottom MLP of
// Linear + ReLU, embedding bags, dot interaction, top MLP of Linear + ReLU ending in a sigmoid)
// and torchrec's DLRM (the same with KeyedJaggedTensor bags, pairs in triu order, a logit out)
// in a graph of primitives. Matmuls and bags are found by structure; what lies between them
// (bias adds, activations, the interaction's concat / bmm / index / cat) is checked by value:
// each region is evaluated on the reference runtime with random inputs and compared with what a
// DLRM computes there, so any frontend's decomposition of the same math matches.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "compiler/rules/rules.h"
#include "luminal/nn.h"

namespace luminal::compiler::rules {

/// One Linear layer: SumReduce `sum` of x[b, k] * w[n, k] (the canonical matmul form), plus bias.
struct MatchedLinear {
  NodeId sum = 0, x = 0, w = 0, bias = 0;
  Expr batch, out, in;
  DType dtype = DType::F32;  // x, w, bias and the sum: F32 or BF16
};

/// A DLRM forward found in a graph.
struct DlrmMatch {
  NodeId root = 0;          // the sigmoid's (or the logit's) result: what the Output reads
  NodeId interaction = 0;   // the top MLP's input R = [x, pairs]
  NodeId dense_x = 0;       // the bottom MLP's input
  std::vector<MatchedLinear> bottom, top;  // in forward order
  std::vector<NodeId> bags;                // embedding_bag custom nodes, in interaction order
  Expr batch;
  DType dtype = DType::F32;  // the MLPs' and bags' dtype: F32, or BF16 (a bf16 program)
  nn::BagMode mode = nn::BagMode::Sum;
  bool mixed_modes = false;  // tables disagree on sum / mean
  bool sigmoid = true;       // the top MLP ends in a sigmoid (else in the logit, as torchrec's DLRM)
  bool closed = false;       // every bag's offsets are closed (a KeyedJaggedTensor key's bags)
  bool mixed_offsets = false;  // some bags' offsets are closed, others open
  nn::PairOrder pairs = nn::PairOrder::Lower;  // the interaction's pair order (Upper: torchrec)
};

/// Every DLRM forward feeding an Output of ctx.graph (fp32 or bf16 graphs).
std::vector<DlrmMatch> match_dlrm(const RuleContext& ctx);

}  // namespace luminal::compiler::rules
