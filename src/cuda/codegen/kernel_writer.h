// KernelWriter: builds one generated kernel. It owns the parameter list (buffers, dynamic dims,
// the error flag), the statement list with scoped common-subexpression elimination, and the
// inlining of graph nodes: any node without a plan buffer is recomputed where it is read.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/kernel_plan.h"

namespace luminal::cuda::codegen {

/// A logical index: one int64 code fragment (usually a variable name) per dim.
using Index = std::vector<std::string>;

/// Which compiler a kernel is written for: NVRTC (a __global__ kernel, one CUDA thread per index)
/// or the host C++ compiler (a static inline function of the index `lum_i`, which the CPU backend
/// calls in a loop over each thread's range; host_common.h supplies the lum_* helpers).
enum class Flavor : uint8_t { Cuda, Host };

/// Writes one kernel's source. Usage: register the root's output buffer, emit the prologue with
/// line()/let(), compute values with value()/read(), store, then finish().
class KernelWriter {
 public:
  /// A writer for a kernel named `name` over `plan`'s buffers (buffer_of_node decides inlining).
  KernelWriter(const Graph& g, const compiler::KernelPlan& plan, std::string name,
               Flavor flavor = Flavor::Cuda);
  /// The flavor the source is written in.
  Flavor flavor() const { return flavor_; }
  /// Code of the global thread (work item) index, a long long.
  std::string thread_index() const;

  // ---- parameters ----
  /// Parameter name of plan buffer `index` ("b3"); registers it (written buffers are non-const).
  std::string buffer(int index, bool write);
  /// int64 code of a symbolic expression; its symbols become `long long d_<sym>` parameters.
  std::string dim(const Expr& e);
  /// The `int* err` parameter (error bits of common.cuh), registered on first use.
  std::string error_flag();

  // ---- statements ----
  /// Appends one statement (or any line) at the current indentation.
  void line(const std::string& s);
  /// Appends `head {` and opens a scope (CSE entries made inside are dropped at close()).
  void open(const std::string& head);
  /// Closes the innermost scope with `}`.
  void close();
  /// `const <type> <fresh name> = code;`, reusing an earlier identical definition in scope.
  std::string let(std::string_view type, std::string_view base, const std::string& code);
  /// Like let() but names the variable exactly `name` (must be unique) and skips CSE.
  void let_named(std::string_view type, const std::string& name, const std::string& code);

  // ---- values ----
  /// Value of node `id` at logical index `idx`: loaded from its buffer, or computed inline.
  std::string value(NodeId id, const Index& idx);
  /// Value of node `id` computed from its inputs, even when it has a buffer (kernel roots).
  std::string compute(NodeId id, const Index& idx);
  /// Makes value(id, idx) return `v` (a reduction's result inside its own kernel's epilogue).
  void bind_value(NodeId id, const Index& idx, const std::string& v);
  /// Value of input `in` at the consumer's logical index: reads the producer through the view.
  std::string read(const NodeInput& in, const Index& idx);
  /// Row-major multi-index of `flat` over dims, as variables named prefix0, prefix1, ...
  Index unflatten(const std::string& flat, const std::vector<Expr>& dims, std::string_view prefix);
  /// Row-major flat offset code of idx over dims.
  std::string flatten(const Index& idx, const std::vector<Expr>& dims);

  /// Records `node` as computed by this kernel (listed in the header comment and KernelStep::nodes).
  void note_node(NodeId node);
  /// The finished step: header comment, includes, signature and body.
  compiler::KernelStep finish(Expr threads, unsigned block, const std::string& summary,
                              const std::vector<std::string>& includes = {"common.cuh"});

 private:
  struct Param {
    int buffer = -1;
    bool write = false;
  };
  // One strided coordinate of a view: data position code, extent and element stride.
  struct Term {
    std::string pos;
    Expr extent, stride;
    bool padded = false;
  };
  // One part of a concat: its read (padding on the axis stripped) and its range on the axis.
  struct ConcatPart {
    NodeInput edge;
    Expr start, end;
  };
  // A range of a concat's axis starting at `start`: part index, or -1 for zeros.
  struct Segment {
    Expr start;
    int part = -1;
  };
  std::string fresh(std::string_view base);
  bool concat_parts(const NodeInput& in, const Expr& shift, int& axis, std::vector<ConcatPart>& parts);
  std::optional<std::string> concat_select(NodeId id, const Index& idx);
  void select_segments(const std::vector<ConcatPart>& parts, const std::vector<Segment>& segs, size_t lo,
                       size_t hi, int axis, const Index& idx, const std::string& out, DType dt);
  std::vector<Term> view_terms(const ShapeTracker& v, const Index& idx, bool merge);
  bool aligned_index(const ShapeTracker& v, const std::vector<Expr>& pshape, const std::vector<Term>& terms,
                     const std::string& valid, Index& out);
  void producer_index(const ShapeTracker& v, const std::vector<Expr>& pshape, const Index& idx,
                      const std::string& valid, Index& out);
  std::string view_offset(const ShapeTracker& v, const Index& idx);
  std::string view_guard(const ShapeTracker& v, const Index& idx);
  std::string gather(NodeId id, const Index& idx);
  std::string unit_reduce(NodeId id, const Index& idx);
  std::string signature() const;

  const Graph& g_;
  const compiler::KernelPlan& plan_;
  std::string name_;
  Flavor flavor_ = Flavor::Cuda;
  std::vector<Param> params_;
  std::set<std::string> syms_;
  bool err_ = false;
  std::vector<std::string> body_;
  std::vector<std::map<std::string, std::string>> scopes_{1};
  std::map<std::string, int> name_counts_;
  std::vector<NodeId> nodes_;
  std::set<NodeId> node_set_;
};

/// True when s is a plain identifier or number (needs no parentheses in an expression).
bool is_atom(std::string_view s);
/// s as one operand: unchanged when an atom or one parenthesized group, else wrapped in ().
std::string paren(const std::string& s);

}  // namespace luminal::cuda::codegen
