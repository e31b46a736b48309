// PyTorch programs on luminal: a torch.export archive (.pt2) translated to a graph by the ATen
// translator (src/frontend/aten/), then compiled for a runtime with its weights loaded.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "luminal/compile.h"
#include "luminal/precision.h"
#include "luminal/pt2.h"
#include "luminal/runtime.h"

namespace luminal {

/// One user input or output of an imported program, in torch.export's flat order.
struct ProgramTensor {
  /// The placeholder name for inputs ("dense_x", "ls_i_0"); "output_<i>" for outputs.
  std::string name;
  DType dtype = DType::F32;
  /// Dims as exported; symbolic ones use the archive's symbol names ("s77").
  std::vector<Expr> dims;
  /// The graph's Input node (inputs) or Output node (outputs).
  GraphTensor tensor;
};

/// A weight, buffer or lifted constant of the archive bound to a persisted graph input.
struct ProgramWeight {
  GraphTensor tensor;
  const Pt2Tensor* source = nullptr;
};

/// How the translator builds the graph.
struct ImportOptions {
  /// Selects models/<name>.json ("" = the first).
  std::string model;
};

/// A .pt2 archive translated to a graph (the ATen translator's result). Holds the archive, so
/// weight bytes stay mapped while it lives.
struct ImportedProgram {
  std::shared_ptr<const Pt2Archive> archive;
  std::unique_ptr<Graph> graph;
  std::vector<ProgramTensor> inputs;
  std::vector<ProgramTensor> outputs;
  std::vector<ProgramWeight> weights;
  /// Bounds of every symbol the program uses (from range_constraints).
  std::map<std::string, Pt2RangeConstraint> symbols;

  /// Solves every symbol from concrete input shapes (in `inputs` order) and checks every input
  /// dim against its expression and the symbol's range; throws "[program] input 'x' ..." naming
  /// the input, the dim and both values.
  DynMap bind_dims(const std::vector<std::vector<int64_t>>& input_shapes) const;
};

/// Translates an open archive. Throws "[aten] <op> (node '<name>'): <problem>" for an ATen op
/// outside the translator's table or an argument it cannot honour (with the Python source line
/// when the archive recorded one), "[pt2] ..." for archive-level problems.
ImportedProgram import_pt2(std::shared_ptr<const Pt2Archive> archive,
                           const ImportOptions& opts = {});
/// Opens and translates a .pt2 file.
ImportedProgram import_pt2(const std::string& path, const ImportOptions& opts = {});

/// Where and how a compiled program runs.
struct ProgramOptions {
  /// The backend (luminal/devices.h; nullptr: the reference).
  Target target;
  /// > 0: dim buckets for the program's batch, 1..max_batch in powers of two (one plan each):
  /// the batch is the symbol of dim 0 of the first input whose dim 0 is symbolic (export with a
  /// dynamic batch); refused with the reason when there is none.
  int64_t max_batch = 0;
  /// How compile() builds and searches: precision fp32, tf32 or bf16 (a program already in bf16:
  /// the Python API casts the model; here it sets the search's tolerance; int8 is refused), the
  /// search, dim buckets,
  /// `alternative` for the rewrite rules (the program's lifted constants are added to
  /// `constants` by CompiledProgram).
  CompileOptions compile;
};

/// An imported program on a runtime with its weights loaded: bind inputs, run, read outputs.
/// Inputs are bound per run (host bytes are copied; device pointers are used in place).
class CompiledProgram {
 public:
  /// Opens, translates and compiles a .pt2 file; weights are uploaded before it returns.
  static std::unique_ptr<CompiledProgram> load(const std::string& path,
                                               const ProgramOptions& opts = {});
  /// Compiles an already imported program (takes ownership).
  CompiledProgram(ImportedProgram program, const ProgramOptions& opts);
  ~CompiledProgram();
  CompiledProgram(const CompiledProgram&) = delete;
  CompiledProgram& operator=(const CompiledProgram&) = delete;

  /// The translated program (inputs, outputs, graph).
  const ImportedProgram& program() const { return program_; }
  /// The options it was compiled with.
  const ProgramOptions& options() const { return opts_; }
  /// The compiled program (stats, the search's report).
  Executable& executable() { return *exec_; }

  /// Input i from host bytes in its dtype (copied), with its concrete shape.
  void set_input(size_t i, std::span<const std::byte> bytes, std::span<const int64_t> shape);
  /// Input i from the target's device memory, used in place (the caller keeps it alive).
  void set_input_device(size_t i, void* ptr, size_t bytes, std::span<const int64_t> shape);
  /// Output i written into the target's memory (the caller keeps it alive): `bytes` must be its
  /// size at the next run's dims; nullptr returns it to a plan-owned buffer.
  void set_output_device(size_t i, void* ptr, size_t bytes);
  /// Runs on this stream from now on (a CUstream; nullptr: the legacy default stream); a no-op
  /// on host targets.
  void set_stream(void* stream);
  /// Waits for the queued runs and throws if a kernel reported bad input (an out-of-range index)
  /// since the last check; host targets throw during run() instead.
  void check_errors();
  /// Solves the dims from the bound input shapes (run() does it too): output_shape() then gives
  /// the shapes the next run produces. Throws "[program] input 'x' ..." for inconsistent shapes.
  void bind();
  /// Runs with the inputs bound since the last run (every input must be bound).
  void run();
  /// Output i's shape at the last run (or bind()).
  std::vector<int64_t> output_shape(size_t i) const;
  /// Output i's bytes (synchronizes).
  std::vector<std::byte> output_bytes(size_t i);
  /// The dims of the last run.
  const DynMap& dims() const { return dims_; }
  /// One line per region a rewrite rule recognized: its shape, the alternative the plan runs and
  /// why the others were not ("dlrm: bottom 13-64-16, ... -> mega").
  std::vector<std::string> rule_report() const { return exec_->rule_report(); }

 private:
  void check_index(size_t i, const char* op) const;
  void bind_shape(size_t i, std::span<const int64_t> shape, size_t bytes, const char* op);

  ImportedProgram program_;
  ProgramOptions opts_;
  std::unique_ptr<Executable> exec_;
  std::vector<std::vector<int64_t>> shapes_;  // per input, as bound
  std::vector<bool> bound_, host_bound_;
  bool shapes_changed_ = true;
  DynMap dims_;
};

}  // namespace luminal
