// Everything a program that builds, compiles and runs graphs needs, in one include.
#pragma once

#include "luminal/compile.h"      // compile(graph, target, options) -> Executable
#include "luminal/devices.h"      // backend_for("auto" | "cpu" | "cuda" | ...)
#include "luminal/environment.h"  // the documented LUMINAL_* variables into options
#include "luminal/graph.h"        // Graph, named_tensor
#include "luminal/nn.h"           // layers
#include "luminal/safetensors.h"  // load_safetensors
#include "luminal/tensor.h"       // GraphTensor operations
