// Activations: relu, sigmoid, ... on the GraphTensor API's decompositions (the lowering
// pattern-matches relu's exact form for cuBLASLt epilogues).
#include "frontend/aten/node.h"

namespace luminal::aten {

void lower_relu(AtenNode& n) { n.set_output(n.tensor("self").relu()); }

void lower_sigmoid(AtenNode& n) { n.set_output(n.tensor("self").sigmoid()); }

}  // namespace luminal::aten
