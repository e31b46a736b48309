// The ATen translator's view of one exported node: typed access to its arguments (by schema
// name, with defaults), the exported output metadata, and the place to put its results. Every
// lowering in ops_*.cpp takes one AtenNode&.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/pt2.h"
#include "luminal/tensor.h"

namespace luminal::aten {

/// A piece of a 1-D tensor whose bounds were read from data (split_with_sizes by item()s, as
/// KeyedJaggedTensor.to_dict splits its values per key): base[start, end). It is not a graph tensor
/// (its length is unknown until run time); embedding_bag reads it as base with its offsets moved by
/// start. start and end are 0-d I64 graph tensors, moved past len(base) when the split's sizes do
/// not sum to len(base) (torch asserts they do), so the bag kernels report bad offsets.
struct Segment {
  GraphTensor base, start, end;
  std::string base_name;
};

/// Values produced so far, by graph value name.
struct Values {
  std::map<std::string, GraphTensor> tensors;
  std::map<std::string, Expr> sym_ints;
  std::map<std::string, double> sym_floats;
  std::map<std::string, Expr> sym_bools;  // 0 or 1; symbolic when it compares sizes
  std::map<std::string, GraphTensor> data_scalars;  // item()'s symbol (u0) -> its 0-d I64 tensor
  std::map<std::string, Segment> segments;           // by value name
};

/// A Python scalar argument (int, float or bool) as passed to an ATen op.
struct Scalar {
  double value = 0.0;
  bool is_float = false;  // a Python float (else int or bool)
  bool is_bool = false;
};

/// One node being translated.
class AtenNode {
 public:
  AtenNode(Graph& g, const Pt2Program& program, const Pt2Node& node, Values& values);

  /// The graph being built.
  Graph& graph() { return g_; }
  /// The serialized node.
  const Pt2Node& node() const { return node_; }
  /// "aten.linear.default".
  std::string_view op() const { return op_; }

  // ---- arguments, by ATen schema name ----
  /// True when the argument was serialized and is not None.
  bool has(std::string_view name) const;
  /// A tensor argument (throws when missing or not a tensor).
  GraphTensor tensor(std::string_view name) const;
  /// An optional tensor (nullopt when absent or None).
  std::optional<GraphTensor> opt_tensor(std::string_view name) const;
  /// A Tensor[] argument.
  std::vector<GraphTensor> tensors(std::string_view name) const;
  /// A Tensor?[] argument (index.Tensor's indices): None entries are nullopt.
  std::vector<std::optional<GraphTensor>> opt_tensors(std::string_view name) const;
  /// An int / SymInt argument; `fallback` when absent (throws when absent and no fallback).
  Expr sym_int(std::string_view name, std::optional<Expr> fallback = std::nullopt) const;
  /// A concrete int argument (a SymInt must be constant here).
  int64_t int_(std::string_view name, std::optional<int64_t> fallback = std::nullopt) const;
  /// An optional int (nullopt when absent or None).
  std::optional<int64_t> opt_int(std::string_view name) const;
  /// An int[] / SymInt[] argument.
  std::vector<Expr> sym_ints(std::string_view name,
                             std::optional<std::vector<Expr>> fallback = std::nullopt) const;
  /// A concrete int[] argument; a single int counts as a one-element list.
  std::vector<int64_t> ints(std::string_view name,
                            std::optional<std::vector<int64_t>> fallback = std::nullopt) const;
  /// A Scalar / float / int / bool argument.
  Scalar scalar(std::string_view name, std::optional<double> fallback = std::nullopt) const;
  /// A bool argument (a SymBool must be constant here).
  bool bool_(std::string_view name, std::optional<bool> fallback = std::nullopt) const;
  /// An int / bool / SymInt / SymBool argument as an Expr (SymBools are 0 or 1); nullopt when the
  /// argument is absent or of another kind (a tensor, a float).
  std::optional<Expr> sym_value(std::string_view name) const;
  /// The exported metadata of tensor argument `name` (its torch sizes and strides).
  const Pt2TensorMeta& arg_meta(std::string_view name) const;
  /// Tensor argument `name` when it is a Segment (a piece split by sizes read from data).
  std::optional<Segment> segment(std::string_view name) const;
  /// A str argument.
  std::string str(std::string_view name, std::optional<std::string> fallback = std::nullopt) const;
  /// A ScalarType argument as a luminal dtype (nullopt when absent or None; throws for dtypes
  /// luminal lacks).
  std::optional<DType> dtype(std::string_view name) const;

  // ---- the exported result ----
  /// Number of outputs the node declares.
  size_t num_outputs() const { return node_.outputs.size(); }
  /// Output i's exported metadata (throws when it is not a tensor with metadata).
  const Pt2TensorMeta& out_meta(size_t i = 0) const;
  /// Output i's exported dtype.
  DType out_dtype(size_t i = 0) const;
  /// Output i's exported dims as Exprs.
  std::vector<Expr> out_dims(size_t i = 0) const;
  /// True when output i is consumed as a tensor (embedding_bag's unused outputs are not).
  bool output_is_tensor(size_t i) const;

  /// Sets output i (checked against the exported shape and dtype once the lowering returns).
  void set_output(GraphTensor t, size_t i = 0);
  /// Sets a Tensor[] output (split, chunk, unbind).
  void set_tensor_list(const std::vector<GraphTensor>& ts);
  /// Sets a SymInt result (sym_size, symbolic arithmetic).
  void set_sym_int(Expr e);
  /// Sets a SymFloat result (concrete: luminal has no symbolic floats).
  void set_sym_float(double v);
  /// Sets a SymBool result: 0 or 1, symbolic when it compares symbolic sizes.
  void set_sym_bool(Expr v);
  /// Sets a Tensor[] output of Segments (a split by sizes read from data).
  void set_segment_list(const std::vector<Segment>& segs);
  /// The symbol torch.export gave output 0 (a SymInt read from data: "u0"), or "".
  std::string out_symbol() const;
  /// The values read from data so far (item()'s symbol -> its 0-d I64 tensor).
  std::map<std::string, GraphTensor>& data_scalars() { return values_.data_scalars; }

  /// Throws "[aten] <op> (node '<name>'): <why>" with the Python source line when recorded.
  [[noreturn]] void fail(std::string_view why) const;
  /// The error message fail() throws (for wrapping other exceptions).
  std::string message(std::string_view why) const;

  /// Results set so far (output index -> tensor), for the translator's checks.
  const std::map<size_t, GraphTensor>& results() const { return results_; }

 private:
  const Pt2Argument* find(std::string_view name) const;
  const Pt2Argument& need(std::string_view name) const;
  GraphTensor lookup_tensor(const std::string& name) const;
  Expr value_to_expr(const Pt2Value& v, std::string_view arg) const;
  // The names of a Tensor[] output, checked to number `made`.
  const std::vector<Pt2Value>& tensor_list_outputs(size_t made) const;

  Graph& g_;
  const Pt2Program& program_;
  const Pt2Node& node_;
  Values& values_;
  std::string op_;
  std::map<size_t, GraphTensor> results_;
};

/// Expr for a serialized SymInt (a concrete value or a parsed expression).
Expr sym_int_expr(const Pt2SymInt& s);

/// The lowering of one ATen op. How to add one: write `void lower_<name>(AtenNode&)` in the
/// ops_<family>.cpp of its family and list it in aten_ops.def.
using Lowering = void (*)(AtenNode&);

/// The lowering registered for a target ("aten.linear.default"), or nullptr.
Lowering find_lowering(std::string_view target);
/// Every registered target, sorted (for `luminal ops` and the coverage test).
std::vector<std::string> registered_targets();

#define ATEN_OP(target, fn) void fn(AtenNode& n);
#include "frontend/aten/aten_ops.def"
#undef ATEN_OP

}  // namespace luminal::aten
