// luminal._luminal: the C++ side of the Python package. Program wraps CompiledProgram; tensors
// cross as raw pointers + byte counts + shapes (the Python layer owns the torch tensors and does
// every dtype/shape/device check first), so this file stays free of torch.
#include <nanobind/nanobind.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/unique_ptr.h>
#include <nanobind/stl/vector.h>

#include <cstring>

#include "luminal/devices.h"
#include "luminal/environment.h"
#include "luminal/program.h"
#include "options.h"

namespace nb = nanobind;
using namespace nb::literals;

namespace luminal {
namespace {

// [2, "s77", ...]: concrete dims as ints, symbolic ones as their expression text.
nb::list dims_list(const std::vector<Expr>& dims) {
  nb::list out;
  for (const Expr& d : dims) {
    if (auto c = d.as_const()) {
      out.append(*c);
    } else {
      out.append(d.to_string());
    }
  }
  return out;
}

// [(name, dtype, dims), ...].
nb::list tensor_specs(const std::vector<ProgramTensor>& ts) {
  nb::list out;
  for (const ProgramTensor& t : ts)
    out.append(nb::make_tuple(t.name, std::string(dtype_name(t.dtype)), dims_list(t.dims)));
  return out;
}

std::span<std::byte> host_span(uintptr_t ptr, size_t bytes) {
  return {reinterpret_cast<std::byte*>(ptr), bytes};
}

// One tensor handed over from Python: (name, is_param, dtype name, shape, host ptr, device ptr).
// Host tensors are contiguous (the package copies others); a device pointer binds in place.
Pt2Tensor memory_tensor(const nb::handle& h) {
  const auto t = nb::cast<nb::tuple>(h);
  if (t.size() != 6)
    throw std::invalid_argument("luminal: a program tensor is (name, is_param, dtype, shape, "
                                "host_ptr, device_ptr)");
  Pt2Tensor p;
  p.name = nb::cast<std::string>(t[0]);
  p.is_param = nb::cast<bool>(t[1]);
  p.dtype = parse_dtype(nb::cast<std::string>(t[2]));
  p.shape = nb::cast<std::vector<int64_t>>(t[3]);
  int64_t numel = 1;
  for (int64_t d : p.shape) numel *= d;
  p.strides.assign(p.shape.size(), 1);
  for (size_t k = p.shape.size(); k-- > 1;) p.strides[k - 1] = p.strides[k] * p.shape[k];
  const auto host = nb::cast<uintptr_t>(t[4]), device = nb::cast<uintptr_t>(t[5]);
  if (device != 0) {
    p.device_data = reinterpret_cast<const void*>(device);
  } else {
    p.storage = {reinterpret_cast<const std::byte*>(host), size_t(numel) * dtype_size(p.dtype)};
  }
  return p;
}

// A program from its JSON and its tensors' memory (no archive on disk).
std::unique_ptr<CompiledProgram> from_memory(const nb::bytes& json, const nb::list& weights,
                                             const nb::list& constants, const nb::dict& options) {
  std::vector<Pt2Tensor> w, c;
  for (nb::handle h : weights) w.push_back(memory_tensor(h));
  for (nb::handle h : constants) c.push_back(memory_tensor(h));
  const std::string_view text(json.c_str(), json.size());
  auto archive = std::make_shared<const Pt2Archive>(
      Pt2Archive::from_memory(text, std::move(w), std::move(c)));
  return std::make_unique<CompiledProgram>(import_pt2(archive), python::program_options(options));
}

}  // namespace
}  // namespace luminal

NB_MODULE(_luminal, m) {
  using namespace luminal;
  m.doc() = "luminal-cpp runtime bindings (use the luminal package, not this module)";
  apply_process_environment();  // the boundary: LUMINAL_CUDA_DRIVER, ... (docs/options.md)
  m.def("cuda_available", &cuda::available, "True when built with CUDA and a GPU is present.");
  m.def("cuda_device", &cuda::device_description, "The CUDA device, or why there is none.");

  nb::class_<CompiledProgram>(m, "Program", "A translated .pt2 program compiled for a runtime.")
      .def_static(
          "load",
          [](const std::string& path, const nb::dict& options) {
            return CompiledProgram::load(path, python::program_options(options));
          },
          "path"_a, "options"_a,
          "Translates and compiles a .pt2 archive with these options (see options.h); weights are "
          "loaded before it returns.")
      .def_static("from_memory", &from_memory, "program_json"_a, "weights"_a, "constants"_a,
                  "options"_a,
                  "Translates and compiles a serialized ExportedProgram whose weights and constants "
                  "are given as (name, is_param, dtype, shape, host_ptr, device_ptr) tuples; their "
                  "memory must stay alive and unchanged while the program lives.")
      .def_prop_ro(
          "inputs", [](const CompiledProgram& p) { return tensor_specs(p.program().inputs); },
          "[(name, dtype, dims)] of the user inputs, in torch.export's flat order.")
      .def_prop_ro(
          "outputs", [](const CompiledProgram& p) { return tensor_specs(p.program().outputs); },
          "[(name, dtype, dims)] of the outputs.")
      .def_prop_ro(
          "device", [](const CompiledProgram& p) { return tensor_device(*p.options().target); },
          "Where the program's tensors live: 'cuda' or 'cpu'.")
      .def_prop_ro(
          "backend", [](const CompiledProgram& p) { return p.options().target->kind(); },
          "The backend that runs it: 'cuda', 'cpu' or 'reference' (the oracle, which copies host inputs).")
      .def(
          "set_input_host",
          [](CompiledProgram& p, size_t i, uintptr_t ptr, size_t bytes,
             const std::vector<int64_t>& shape) { p.set_input(i, host_span(ptr, bytes), shape); },
          "index"_a, "ptr"_a, "nbytes"_a, "shape"_a,
          "Input i from contiguous host memory (copied).")
      .def(
          "set_input_device",
          [](CompiledProgram& p, size_t i, uintptr_t ptr, size_t bytes,
             const std::vector<int64_t>& shape) {
            p.set_input_device(i, reinterpret_cast<void*>(ptr), bytes, shape);
          },
          "index"_a, "ptr"_a, "nbytes"_a, "shape"_a,
          "Input i from CUDA device memory, used in place.")
      .def(
          "set_output_device",
          [](CompiledProgram& p, size_t i, uintptr_t ptr, size_t bytes) {
            p.set_output_device(i, reinterpret_cast<void*>(ptr), bytes);
          },
          "index"_a, "ptr"_a, "nbytes"_a,
          "Output i written into CUDA device memory (0: runtime-owned).")
      .def(
          "bind",
          [](CompiledProgram& p) {
            p.bind();
            nb::list shapes;
            for (size_t i = 0; i < p.program().outputs.size(); ++i)
              shapes.append(p.output_shape(i));
            return shapes;
          },
          "Solves the dims from the bound input shapes; returns the output shapes of the next run.")
      .def(
          "run",
          [](CompiledProgram& p, uintptr_t stream) {
            if (p.options().target->caps().cc_major == 0) {
              {
                nb::gil_scoped_release unlocked;  // a host run takes a while
                p.run();
              }
              // Host kernels flag bad input (a clamped index) during the run: raise it here, as
              // the call's error, since outputs bound in place are not read back through get_bytes.
              p.check_errors();
            } else {
              // A CUDA run only enqueues work (microseconds): keeping the GIL is cheaper.
              p.set_stream(reinterpret_cast<void*>(stream));
              p.run();
            }
          },
          "stream"_a = 0,
          "Runs with the bound inputs (CUDA: enqueued on `stream`, a raw CUstream).")
      .def(
          "search_report",
          [](CompiledProgram& p) {
            const SearchReport& r = p.executable().search_report();
            nb::dict d;
            d["ran"] = r.ran;
            d["from_cache"] = r.from_cache;
            d["candidate"] = r.candidate;
            d["us"] = r.us;
            d["default_us"] = r.heuristic_us;
            d["candidates"] = r.candidates;
            d["discarded"] = r.discarded;
            d["seconds"] = r.seconds;
            d["choices"] = r.choices;
            return d;
          },
          "What the search decided at the first run (ran = False before it or when off).")
      .def("check_errors", &CompiledProgram::check_errors,
           "CUDA: waits for queued runs; raises if a kernel reported bad input since the last "
           "check.")
      .def("output_shape", &CompiledProgram::output_shape, "index"_a,
           "Output i's shape at the last run.")
      .def(
          "output_to_host",
          [](CompiledProgram& p, size_t i, uintptr_t ptr, size_t bytes) {
            const std::vector<std::byte> b = p.output_bytes(i);
            if (b.size() != bytes)
              throw std::invalid_argument("[output] output " + std::to_string(i) + " has " +
                                          std::to_string(b.size()) + " bytes, the destination " +
                                          std::to_string(bytes));
            std::memcpy(reinterpret_cast<void*>(ptr), b.data(), b.size());
          },
          "index"_a, "ptr"_a, "nbytes"_a,
          "Copies output i into contiguous host memory (synchronizes).")
      .def(
          "stats",
          [](CompiledProgram& p) {
            nb::dict d;
            const PlanStats st = p.executable().stats();
            d["kernels"] = st.kernels;
            d["plan"] = st.steps;
            d["rules"] = p.rule_report();
            return d;
          },
          "The loaded plan: {'kernels': n, 'plan': [steps], 'rules': [what each rewrite rule "
          "recognized and applied]}.");
}
