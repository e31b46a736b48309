// KernelPlan: a graph lowered for the CUDA backend, as plain data (no CUDA headers).
// The lowering (src/compiler/lower.cpp) produces it; the CUDA runtime (src/cuda/runtime) executes it.
#pragma once

#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include "compiler/search/candidate.h"
#include "luminal/graph.h"

namespace luminal::compiler {

/// A device buffer of the plan: the materialized output of one graph node.
struct PlanBuffer {
  enum class Kind : uint8_t { Input, Output, Intermediate };
  NodeId node = 0;
  DType dtype = DType::F32;
  Expr numel;  // elements (symbolic in dynamic dims)
  Kind kind = Kind::Intermediate;
};

/// One argument of a generated kernel, in parameter order.
struct KernelArg {
  enum class Kind : uint8_t { Buffer, Dim, ErrorFlag };
  Kind kind = Kind::Buffer;
  int buffer = -1;   // Buffer: index into KernelPlan::buffers (passed as a device pointer)
  std::string sym;   // Dim: symbol name, passed as long long
  // ErrorFlag: an `int*` the kernel atomically ORs bits into: 1 = gather index out of range,
  // 2 = scatter index out of range (the index was clamped; raise at the next read).
};

/// How a generated reduction assigns work: a thread, a warp or a block per output.
enum class ReduceMode : uint8_t { Thread, Warp, Block };

/// The heuristic's work split for a reduction over `len` elements: a thread per output for short
/// constant axes (< 64), a warp for longer or symbolic ones, a block for very long constant ones
/// (>= 4096).
ReduceMode choose_reduce_mode(const Expr& len);

/// What a generated kernel computes and how, as the lowering decided it: plain data, hashed and
/// logged without any CUDA source. The codegen (src/cuda/codegen: render) turns it into source,
/// parameters and launch shape.
struct KernelSpec {
  enum class Kind : uint8_t {
    Compute,        // out[i] = node's value at element i of `dims` (fusing everything inlined)
    CopyInput,      // out[i] = input `input` of node (its view) at i: a contiguous copy
    Reduce,         // node (SumReduce / MaxReduce) with `mode`; with `epilogue`, that Output
    OnlineSoftmax,  // node = the softmax's SumReduce, `other` = its MaxReduce, `scale`
    ScatterRows,    // node (Scatter): src rows at the (clamped, flagged) indices into out
  };
  Kind kind = Kind::Compute;
  NodeId node = 0;
  int out = -1;             // the buffer written
  std::vector<Expr> dims;   // Compute / CopyInput: the elements, row-major
  int input = -1;           // CopyInput: which input of node
  ReduceMode mode = ReduceMode::Warp;  // Reduce
  int epilogue = -1;        // Reduce: the Output node computed from the reduced value, or -1
  NodeId other = 0;         // OnlineSoftmax: the MaxReduce node
  double scale = 1.0;       // OnlineSoftmax
  std::string suffix;       // appended to the kernel's name ("in0", "dest")
  std::string summary;      // the kernel's one-line description
};

/// A generated kernel (1-D grid): ceil(threads / block) blocks of `block` threads. The lowering
/// fills `spec`; everything else is the codegen's rendering of it (render()).
struct KernelStep {
  KernelSpec spec;
  std::string name;    // extern "C" entry point, unique in the plan
  std::string source;  // complete NVRTC translation unit ("" until rendered)
  std::vector<KernelArg> args;
  Expr threads;        // total threads to launch (symbolic)
  unsigned block = 256;
  unsigned shared_bytes = 0;
  std::vector<NodeId> nodes;  // graph nodes it computes (fused)
  std::vector<int> reads, writes;  // buffer indices
};

/// C[b] = A[b] @ B[b] (row-major views described by element strides), run by cuBLASLt.
/// A is [m, k] with strides (a_row, a_col), B is [k, n] with (b_row, b_col), C is [m, n] contiguous.
struct MatmulStep {
  int a = -1, b = -1, c = -1;
  DType dtype = DType::F32;
  Expr batch = 1, m, n, k;
  Expr a_offset = 0, a_row, a_col, a_batch;
  Expr b_offset = 0, b_row, b_col, b_batch;
  int bias = -1;      // optional [n] bias buffer added in the epilogue
  bool relu = false;  // ReLU in the epilogue
  int algo = 0;       // index into cuBLASLt's heuristic list for this shape (the last if shorter)
  int split_k = 1;    // cuBLASLt split-K slices (1: none), a choice for long k and few output tiles
  // At execute, m <= gemv_max_m runs the GEMV kernel (src/cuda/kernels/gemv.cuh) instead of
  // cuBLASLt where its layout allows (B contiguous along k, aligned); 0: cuBLASLt always.
  int gemv_max_m = 0;
  std::vector<NodeId> nodes;
};

/// A custom op's own kernel, generated once its input dims are known (at first execute).
struct CustomStep {
  NodeId node = 0;
  std::vector<int> inputs;           // buffers, read contiguously from input_offsets[i]
  std::vector<Expr> input_offsets;   // per input: elements into its buffer (a row of lS_o, say)
  int output = -1;
};

/// One step of the plan, run in order on one stream.
using Step = std::variant<KernelStep, MatmulStep, CustomStep>;

/// The whole lowered graph.
struct KernelPlan {
  std::vector<PlanBuffer> buffers;
  std::vector<Step> steps;
  std::vector<int> buffer_of_node;  // per NodeId: buffer index or -1 (inlined / unused)
  std::vector<std::string> symbols; // dynamic dims the plan needs
};

/// Options of the lowering.
struct LowerOptions {
  bool use_cublaslt = true;         // matmul-shaped reductions may become MatmulSteps
  long long cublaslt_min_flops = 1 << 22;  // below this a generated kernel is used
  // Offer cuBLASLt's algorithm list and the GEMV kernel as choice points (CUDA's; a backend
  // whose matmul library picks its own kernel turns them off, so the search does not time them).
  bool library_algos = true;
  DynMap dim_hints;  // representative dynamic dim values for cost decisions (missing ones count as 1024)
  // The search's choices (src/compiler/search): each decision the lowering can make more than one
  // way is asked here and recorded ("matmul@17" = library | generated, ...). nullptr: the
  // heuristic's choice everywhere (today's plan).
  search::Choices* choices = nullptr;
};

/// The answer at a choice point: the search's pick, or options[0] (the heuristic's choice).
std::string choose(const LowerOptions& opts, search::ChoicePoint point);

/// Lowers a graph: decides materialized buffers, which nodes each kernel computes and how (its
/// KernelSpec), and which steps are cuBLASLt matmuls or custom ops. Renders no CUDA source: the
/// codegen does (cuda::codegen::render), so the flow is one way (lowering -> plan -> codegen ->
/// runtime). Throws "[lower] ..." for unsupported graphs.
KernelPlan lower(const Graph& g, const LowerOptions& opts = {});

/// One line per step: the kernel's spec (or its source once rendered), the matmul, the custom op.
std::string describe(const Step& s);

}  // namespace luminal::compiler
