// program_options: the Python keyword arguments of compile()/load() into ProgramOptions.
#include "options.h"

#include <nanobind/stl/string.h>

#include <stdexcept>
#include <string>

#include "luminal/devices.h"
#include "luminal/environment.h"

namespace nb = nanobind;

namespace luminal::python {

namespace {

template <class T>
T get(const nb::handle& v, const std::string& key, const char* what) {
  try {
    return nb::cast<T>(v);
  } catch (const nb::cast_error&) {
    throw std::invalid_argument("luminal: option " + key + " must be " + what);
  }
}

}  // namespace

ProgramOptions program_options(const nb::dict& d) {
  ProgramOptions o;
  apply_environment(o.compile);
  cuda::CudaOptions cuda;
  apply_environment(cuda);
  std::string device = "cpu";
  for (auto [k, v] : d) {
    const std::string key = nb::cast<std::string>(k);
    if (v.is_none()) continue;  // an unset keyword: the default
    if (key == "device") {
      device = get<std::string>(v, key, "a device name");
    } else if (key == "precision") {
      o.compile.precision = parse_precision(get<std::string>(v, key, "a string"));
    } else if (key == "alternative") {
      o.compile.alternative = get<std::string>(v, key, "a string");
    } else if (key == "candidate") {
      o.compile.candidate = get<std::string>(v, key, "a string");
    } else if (key == "search") {
      o.compile.search.enabled = get<bool>(v, key, "True or False");
    } else if (key == "search_candidates") {
      o.compile.search.max_candidates = get<int>(v, key, "an int");
    } else if (key == "search_seconds") {
      o.compile.search.time_budget_s = get<double>(v, key, "a number");
    } else if (key == "search_seed") {
      o.compile.search.seed = get<uint64_t>(v, key, "an int >= 0");
    } else if (key == "research") {
      o.compile.search.force = get<bool>(v, key, "True or False");
    } else if (key == "plan_cache") {
      o.compile.plan_cache = get<bool>(v, key, "True or False");
    } else if (key == "max_batch") {
      o.max_batch = get<int64_t>(v, key, "an int");
      if (o.max_batch < 1) throw std::invalid_argument("luminal: option max_batch must be >= 1");
    } else if (key == "dim_hints") {
      for (auto [s, x] : get<nb::dict>(v, key, "a dict {symbol: value}"))
        o.compile.dim_hints[nb::cast<std::string>(s)] = get<int64_t>(x, key, "a dict of ints");
    } else if (key == "cuda_graph") {
      cuda.cuda_graph = get<bool>(v, key, "True or False");
    } else if (key == "graph_branches") {
      cuda.graph_branches = get<int>(v, key, "an int");
    } else if (key == "branch_priorities") {
      cuda.branch_priorities = get<bool>(v, key, "True or False");
    } else if (key == "matmul_autotune") {
      cuda.matmul_autotune = get<bool>(v, key, "True or False");
    } else {
      throw std::invalid_argument("luminal: unknown option '" + key + "'");
    }
  }
  o.target = backend_for(device, cuda);
  return o;
}

}  // namespace luminal::python
