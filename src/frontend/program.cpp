// CompiledProgram: an imported .pt2 compiled for a target (compile(), luminal/compile.h), plus the
// shape binding of ImportedProgram (symbols solved from the inputs' concrete shapes).
#include <cstring>
#include <map>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "luminal/program.h"

namespace luminal {
namespace {

std::string dims_text(std::span<const int64_t> s) {
  return fmt::format("[{}]", fmt::join(s, ", "));
}

// The tensor's elements as contiguous row-major bytes (torch may store a view of a larger storage).
std::vector<std::byte> contiguous_copy(const Pt2Tensor& t) {
  const size_t es = dtype_size(t.dtype);
  int64_t numel = 1;
  for (int64_t d : t.shape) numel *= d;
  std::vector<std::byte> out(static_cast<size_t>(numel) * es);
  std::vector<int64_t> idx(t.shape.size(), 0);
  for (int64_t i = 0; i < numel; ++i) {
    int64_t off = t.storage_offset;
    for (size_t d = 0; d < idx.size(); ++d) off += idx[d] * t.strides[d];
    std::memcpy(out.data() + static_cast<size_t>(i) * es,
                t.storage.data() + static_cast<size_t>(off) * es, es);
    for (size_t d = idx.size(); d-- > 0;) {
      if (++idx[d] < t.shape[d]) break;
      idx[d] = 0;
    }
  }
  return out;
}

}  // namespace

DynMap ImportedProgram::bind_dims(const std::vector<std::vector<int64_t>>& shapes) const {
  if (shapes.size() != inputs.size())
    throw std::invalid_argument(fmt::format("[program] {} input shapes given, the program takes {}",
                                            shapes.size(), inputs.size()));
  DynMap dyn;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ProgramTensor& in = inputs[i];
    if (shapes[i].size() != in.dims.size())
      throw std::invalid_argument(
          fmt::format("[program] input '{}' has shape {}, expected rank {} ({})", in.name,
                      dims_text(shapes[i]), in.dims.size(), shape_string(in.dims)));
    for (size_t d = 0; d < in.dims.size(); ++d) {
      auto sym = in.dims[d].as_sym();
      if (!sym) continue;
      auto [it, fresh] = dyn.emplace(*sym, shapes[i][d]);
      if (!fresh && it->second != shapes[i][d])
        throw std::invalid_argument(fmt::format(
            "[program] input '{}' dim {} is {}, but symbol {} is already {} from an earlier input",
            in.name, d, shapes[i][d], *sym, it->second));
    }
  }
  // A dim that is a linear function of one symbol no input carries plainly (a KeyedJaggedTensor's
  // lengths: keys x batch): solved from it, a + b * s = value.
  for (bool progress = true; progress;) {
    progress = false;
    for (size_t i = 0; i < inputs.size(); ++i)
      for (size_t d = 0; d < inputs[i].dims.size(); ++d) {
        const Expr& e = inputs[i].dims[d];
        std::vector<std::string> unbound;
        for (const std::string& sym : e.symbols())
          if (!dyn.count(sym)) unbound.push_back(sym);
        if (unbound.size() != 1) continue;
        DynMap at = dyn;
        at[unbound[0]] = 0;
        const int64_t a = e.eval(at);
        at[unbound[0]] = 1;
        const int64_t b = e.eval(at) - a;
        if (b == 0 || (shapes[i][d] - a) % b != 0) continue;  // not linear in it, or no integer solution
        at[unbound[0]] = (shapes[i][d] - a) / b;
        if (e.eval(at) != shapes[i][d]) continue;
        dyn[unbound[0]] = at[unbound[0]];
        progress = true;
      }
  }
  for (const auto& [sym, v] : dyn) {
    auto r = symbols.find(sym);
    if (r == symbols.end()) continue;
    if ((r->second.min && v < *r->second.min) || (r->second.max && v > *r->second.max))
      throw std::invalid_argument(
          fmt::format("[program] symbol {} = {} is outside its exported range [{}, {}]", sym, v,
                      r->second.min ? std::to_string(*r->second.min) : "-inf",
                      r->second.max ? std::to_string(*r->second.max) : "inf"));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ProgramTensor& in = inputs[i];
    for (size_t d = 0; d < in.dims.size(); ++d) {
      int64_t want = 0;
      try {
        want = in.dims[d].eval(dyn);
      } catch (const std::exception&) {
        throw std::invalid_argument(
            fmt::format("[program] input '{}' dim {} ({}) cannot be solved from the input "
                        "shapes",
                        in.name, d, in.dims[d].to_string()));
      }
      if (want != shapes[i][d])
        throw std::invalid_argument(
            fmt::format("[program] input '{}' has shape {}, expected {} (dim {} must be {})",
                        in.name, dims_text(shapes[i]), shape_string(in.dims), d, want));
    }
  }
  return dyn;
}

std::unique_ptr<CompiledProgram> CompiledProgram::load(const std::string& path,
                                                       const ProgramOptions& opts) {
  return std::make_unique<CompiledProgram>(import_pt2(path), opts);
}

// Buffers and lifted constants up to 1 MB count as known values for the rules (DLRM's li / lj
// index tensors); parameters never do, so a match does not depend on the weights' values.
CompiledProgram::CompiledProgram(ImportedProgram program, const ProgramOptions& opts)
    : program_(std::move(program)), opts_(opts) {
  if (int8_tables(opts.compile.precision))
    throw std::invalid_argument(fmt::format(
        "[program] precision {} is not supported for imported programs (fp32, tf32 and bf16 "
        "are; int8 tables and fp8 GEMMs come from the DLRM example's --precision)",
        precision_name(opts.compile.precision)));
  if (!opts_.target) opts_.target = reference_backend();
  if (opts_.max_batch > 0) {
    std::string batch;
    for (const ProgramTensor& in : program_.inputs)
      if (batch.empty() && !in.dims.empty())
        if (auto sym = in.dims[0].as_sym()) batch = *sym;
    if (batch.empty())
      throw std::invalid_argument(
          "[program] max_batch needs a dynamic batch: no input's dim 0 is symbolic (export with "
          "dynamic_shapes marking dim 0)");
    opts_.compile.buckets = {batch, pow2_buckets(1, opts_.max_batch)};
  }
  auto known = std::make_shared<std::map<NodeId, std::span<const std::byte>>>();
  for (const ProgramWeight& w : program_.weights)
    if (!w.source->is_param && w.source->device_data == nullptr && w.source->is_contiguous() &&
        w.source->contiguous_bytes().size() <= (size_t{1} << 20))
      (*known)[w.tensor.id] = w.source->contiguous_bytes();
  CompileOptions co = opts_.compile;
  co.constants = [known](NodeId id) -> std::optional<std::span<const std::byte>> {
    auto it = known->find(id);
    if (it == known->end()) return std::nullopt;
    return it->second;
  };
  exec_ = compile(*program_.graph, opts_.target, std::move(co));
  for (const ProgramWeight& w : program_.weights) {
    if (w.source->device_data != nullptr) {  // in the target's memory: bound in place
      size_t numel = 1;
      for (int64_t d : w.source->shape) numel *= size_t(d);
      exec_->set_device_ptr(w.tensor, const_cast<void*>(w.source->device_data),
                            numel * dtype_size(w.source->dtype));
    } else if (w.source->is_contiguous()) {
      exec_->set_bytes(w.tensor, w.source->contiguous_bytes());
    } else {
      exec_->set_bytes(w.tensor, contiguous_copy(*w.source));
    }
  }
  shapes_.resize(program_.inputs.size());
  bound_.assign(program_.inputs.size(), false);
  host_bound_.assign(program_.inputs.size(), false);
}

CompiledProgram::~CompiledProgram() = default;

void CompiledProgram::check_index(size_t i, const char* op) const {
  if (i >= program_.inputs.size())
    throw std::out_of_range(fmt::format("[{}] input {} out of range (the program has {})", op, i,
                                        program_.inputs.size()));
}

void CompiledProgram::bind_shape(size_t i, std::span<const int64_t> shape, size_t bytes,
                                 const char* op) {
  const ProgramTensor& in = program_.inputs[i];
  int64_t numel = 1;
  for (int64_t d : shape) {
    if (d < 0)
      throw std::invalid_argument(
          fmt::format("[{}] input '{}': negative dim in {}", op, in.name, dims_text(shape)));
    numel *= d;
  }
  if (bytes != static_cast<size_t>(numel) * dtype_size(in.dtype))
    throw std::invalid_argument(fmt::format(
        "[{}] input '{}' is {} {}: {} bytes given, {} needed", op, in.name, dtype_name(in.dtype),
        dims_text(shape), bytes, static_cast<size_t>(numel) * dtype_size(in.dtype)));
  if (!std::equal(shape.begin(), shape.end(), shapes_[i].begin(), shapes_[i].end())) {
    shapes_[i].assign(shape.begin(), shape.end());
    shapes_changed_ = true;
  }
  bound_[i] = true;
}

void CompiledProgram::set_input(size_t i, std::span<const std::byte> bytes,
                                std::span<const int64_t> shape) {
  check_index(i, "set_input");
  bind_shape(i, shape, bytes.size(), "set_input");
  exec_->set_bytes(program_.inputs[i].tensor, bytes);
  host_bound_[i] = true;
}

void CompiledProgram::set_input_device(size_t i, void* ptr, size_t bytes,
                                       std::span<const int64_t> shape) {
  check_index(i, "set_input_device");
  bind_shape(i, shape, bytes, "set_input_device");
  exec_->set_device_ptr(program_.inputs[i].tensor, ptr, bytes);
  host_bound_[i] = false;
}

void CompiledProgram::set_output_device(size_t i, void* ptr, size_t bytes) {
  if (i >= program_.outputs.size())
    throw std::out_of_range(
        fmt::format("[set_output_device] output {} out of range (the program "
                    "has {})",
                    i, program_.outputs.size()));
  try {
    exec_->set_output_ptr(program_.outputs[i].tensor, ptr, bytes);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(
        fmt::format("[set_output_device] output '{}': {}", program_.outputs[i].name, e.what()));
  }
}

void CompiledProgram::set_stream(void* stream) { exec_->set_stream(stream); }

void CompiledProgram::check_errors() { exec_->check_errors(); }

void CompiledProgram::bind() {
  for (size_t i = 0; i < bound_.size(); ++i)
    if (!bound_[i])
      throw std::invalid_argument(
          fmt::format("[run] input '{}' was not set (host inputs are consumed by each run)",
                      program_.inputs[i].name));
  if (shapes_changed_) {
    dims_ = program_.bind_dims(shapes_);
    shapes_changed_ = false;
  }
}

void CompiledProgram::run() {
  bind();
  exec_->execute(dims_);
  // Host inputs are consumed by execute() (the runtime contract); device pointers stay bound.
  for (size_t i = 0; i < bound_.size(); ++i)
    if (host_bound_[i]) bound_[i] = host_bound_[i] = false;
}

std::vector<int64_t> CompiledProgram::output_shape(size_t i) const {
  if (i >= program_.outputs.size())
    throw std::out_of_range(fmt::format("[output] output {} out of range", i));
  return eval_all(program_.outputs[i].dims, dims_);
}

std::vector<std::byte> CompiledProgram::output_bytes(size_t i) {
  if (i >= program_.outputs.size())
    throw std::out_of_range(fmt::format("[output] output {} out of range", i));
  return exec_->get_bytes(program_.outputs[i].tensor);
}

}  // namespace luminal
