// PyTorch .pt2 archives (torch.export.save): the serialized ExportedProgram and its weights, read
// without libtorch. Mirrors torch/_export/serde/schema.py (schema major version 8) as plain
// structs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "luminal/dtype.h"

namespace luminal {

/// A size, stride or offset: a concrete int, or a symbolic expression such as "s77" or "2*s0".
struct Pt2SymInt {
  /// Empty for a concrete value.
  std::string expr;
  /// The value when concrete; the example ("hint") value when symbolic and one was recorded.
  int64_t value = 0;
  /// True when a symbolic value has a hint.
  bool has_hint = false;
  /// True for a symbolic value.
  bool is_symbolic() const { return !expr.empty(); }
  /// "8" or "s0".
  std::string str() const;
};

/// Metadata of one tensor value in the graph (schema TensorMeta).
struct Pt2TensorMeta {
  /// torch ScalarType code as serialized (7 = float32, 5 = int64, ...).
  int scalar_type = 0;
  /// The luminal dtype for scalar_type, or nullopt when luminal has none (complex, fp8, ...).
  std::optional<DType> dtype;
  std::vector<Pt2SymInt> sizes;
  std::vector<Pt2SymInt> strides;
  Pt2SymInt storage_offset;
  /// Device type ("cpu", "cuda") and index (-1 when unset).
  std::string device = "cpu";
  int device_index = -1;
  bool requires_grad = false;
};

/// One scalar element of an argument.
struct Pt2Value {
  enum class Kind { None, Name, Int, Float, Bool, String };
  Kind kind = Kind::None;
  /// A tensor or symbol name (Name) or a string (String).
  std::string str;
  int64_t i = 0;
  double f = 0.0;
  bool b = false;
};

/// A node argument or graph input/output (schema Argument, a tagged union). `kind` is the tag
/// without "as_" ("tensor", "tensors", "int", "ints", "sym_int", "scalar_type", "device",
/// "optional_tensors", "none", ...); `values` hold its elements in order (a device is
/// [String type, Int index or None]; an enum such as scalar_type is one Int). Kinds with nested
/// structure (graph, int_lists, string_to_argument, ...) keep their JSON text in `json`.
struct Pt2Argument {
  std::string kind;
  std::vector<Pt2Value> values;
  std::string json;
  /// The tensor name of a "tensor" / "optional_tensor" argument, else "".
  std::string tensor_name() const;
};

/// A node input: the ATen schema's parameter name and its argument.
struct Pt2NamedArgument {
  std::string name;
  Pt2Argument arg;
  /// True for a keyword argument (schema ArgumentKind KEYWORD, recorded since schema 8.x).
  bool keyword = false;
};

/// One call in the graph (schema Node); `target` is e.g. "torch.ops.aten.linear.default".
struct Pt2Node {
  std::string target;
  std::string name;
  std::vector<Pt2NamedArgument> inputs;
  std::vector<Pt2Argument> outputs;
  /// stack_trace, nn_module_stack, source_fn_stack, torch_fn, ... as serialized strings.
  std::map<std::string, std::string> metadata;
  /// metadata["stack_trace"], or "".
  std::string stack_trace() const;
};

/// The graph (schema Graph).
struct Pt2Graph {
  std::vector<Pt2Argument> inputs;
  std::vector<Pt2Argument> outputs;
  std::vector<Pt2Node> nodes;
  std::map<std::string, Pt2TensorMeta> tensor_values;
  std::map<std::string, Pt2SymInt> sym_int_values;
  bool is_single_tensor_return = false;
};

/// What a graph input is (schema InputSpec tag).
enum class Pt2InputKind {
  UserInput,
  Parameter,
  Buffer,
  TensorConstant,
  CustomObj,
  Token,
  ConstantInput
};
/// What a graph output is (schema OutputSpec tag).
enum class Pt2OutputKind {
  UserOutput,
  LossOutput,
  BufferMutation,
  GradientToParameter,
  GradientToUserInput,
  UserInputMutation,
  Token,
  ParameterMutation
};

/// One graph input: `name` is the placeholder's name, `target` the state_dict / constants name
/// for parameters, buffers and constants ("" for user inputs).
struct Pt2InputSpec {
  Pt2InputKind kind = Pt2InputKind::UserInput;
  std::string name;
  std::string target;
  /// For user inputs: the argument (a tensor, sym_int, int, ...); for others a
  /// "tensor"/"custom_obj".
  Pt2Argument arg;
  bool persistent = true;
};

/// One graph output; `target` names the mutated buffer/parameter/input where there is one.
struct Pt2OutputSpec {
  Pt2OutputKind kind = Pt2OutputKind::UserOutput;
  std::string name;
  std::string target;
  Pt2Argument arg;
};

/// Bounds of a symbol; nullopt where torch serialized null (unbounded).
struct Pt2RangeConstraint {
  std::optional<int64_t> min;
  std::optional<int64_t> max;
};

/// The serialized ExportedProgram (models/<name>.json).
struct Pt2Program {
  Pt2Graph graph;
  std::vector<Pt2InputSpec> input_specs;
  std::vector<Pt2OutputSpec> output_specs;
  std::map<std::string, Pt2RangeConstraint> range_constraints;
  std::map<std::string, int64_t> opset_version;
  int schema_major = 0;
  int schema_minor = 0;
  /// The writer's torch version ("2.11.0+cu130"), "" when absent.
  std::string torch_version;
};

/// A weight or tensor constant's bytes and layout. element (i0, i1, ...) is at byte
/// (storage_offset + sum i_k * strides[k]) * dtype_size(dtype) of `storage`.
struct Pt2Tensor {
  std::string name;
  DType dtype = DType::F32;
  std::vector<int64_t> shape;
  std::vector<int64_t> strides;
  int64_t storage_offset = 0;
  /// The whole storage file (several tensors may share one, as torch dedups aliasing views).
  /// Little-endian and possibly unaligned: memcpy before reading typed values.
  std::span<const std::byte> storage;
  /// True when `storage` points into the file mapping (a STORED entry), false when inflated.
  bool mapped = false;
  /// True for a parameter (nn.Parameter), false for a buffer or constant.
  bool is_param = false;
  /// In-memory programs: the tensor's contiguous elements live at this address of the compile
  /// target's device (a CUDA tensor bound zero-copy); `storage` is then empty.
  const void* device_data = nullptr;
  /// True when the elements are dense row-major starting at storage_offset.
  bool is_contiguous() const;
  /// The contiguous bytes of the tensor (numel * dtype_size), a sub-span of `storage`; throws
  /// "[pt2] ..." when the tensor is not contiguous.
  std::span<const std::byte> contiguous_bytes() const;
};

/// A read-only .pt2 archive; move-only; weight spans stay valid while it lives. open() validates
/// everything up front and throws "[pt2] <path>: <problem>".
class Pt2Archive {
 public:
  /// Opens and validates the archive; `model` picks models/<model>.json (the first if empty).
  static Pt2Archive open(const std::string& path, const std::string& model = "");
  /// A program handed over in memory (the Python module: no archive file): the serialized
  /// ExportedProgram's JSON (what models/<name>.json holds) and its weights and constants, whose
  /// storage (or device_data) the caller keeps alive and unchanged while the archive lives.
  /// Validated as open() does; throws "[pt2] in-memory program: <problem>".
  static Pt2Archive from_memory(std::string_view program_json, std::vector<Pt2Tensor> weights,
                                std::vector<Pt2Tensor> constants);
  Pt2Archive(Pt2Archive&&) noexcept;
  Pt2Archive& operator=(Pt2Archive&&) noexcept;
  ~Pt2Archive();

  /// The exported program.
  const Pt2Program& program() const { return program_; }
  /// Parameters and persistent buffers (the state_dict), sorted by name.
  const std::vector<Pt2Tensor>& weights() const { return weights_; }
  /// Lifted tensor constants and non-persistent buffers, sorted by name.
  const std::vector<Pt2Tensor>& constants() const { return constants_; }
  /// The weight or constant with this state_dict / constants name, or nullptr.
  const Pt2Tensor* find_tensor(const std::string& name) const;
  /// The archive's folder prefix inside the zip ("mlp/"; "" when entries sit at the root).
  const std::string& prefix() const { return prefix_; }
  /// The model name (models/<name>.json).
  const std::string& model_name() const { return model_; }
  /// The archive_version file's value (0 when absent).
  int archive_version() const { return archive_version_; }
  /// Every model name in the archive.
  const std::vector<std::string>& model_names() const { return models_; }
  /// The path it was opened from.
  const std::string& path() const { return path_; }

 private:
  struct Impl;
  Pt2Archive();
  std::string path_, prefix_, model_;
  std::vector<std::string> models_;
  int archive_version_ = 0;
  Pt2Program program_;
  std::vector<Pt2Tensor> weights_, constants_;
  std::unique_ptr<Impl> impl_;
};

/// The luminal dtype for a serialized torch ScalarType code, or nullopt.
std::optional<DType> dtype_from_torch_scalar_type(int code);
/// torch's name for a ScalarType code ("float32", "int64", "complex64", ... or "scalar_type(N)").
std::string torch_scalar_type_name(int code);

}  // namespace luminal
