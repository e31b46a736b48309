// The CPU backend's translation unit: the plan's kernels rendered as host C++ (codegen Flavor::Host)
// after the host prelude, each with an extern "C" entry that runs a range of its work items.
#pragma once

#include <string>
#include <vector>

#include "compiler/kernel_plan.h"

namespace luminal::cpu {

/// How a kernel step's entry takes its arguments: lum_run_<name>(void* const* buffers,
/// const long long* dims, int* err, long long begin, long long end) runs work items [begin, end).
struct HostEntry {
  size_t step = 0;                 // index into KernelPlan::steps
  std::string symbol;              // "lum_run_k7_sum_reduce"
  std::vector<int> buffers;        // plan buffer of each buffers[] slot
  std::vector<std::string> dims;   // dynamic dim of each dims[] slot
};

/// The whole source (prelude, kernels, entries) of a rendered plan, and each kernel step's entry.
struct HostSource {
  std::string text;
  std::vector<HostEntry> entries;
};

/// Renders `plan`'s kernel steps as host code (plan's KernelSteps get their host source) and
/// writes the translation unit. Steps that are not kernels (matmuls, custom ops) get no entry.
HostSource host_source(const Graph& g, compiler::KernelPlan& plan);

}  // namespace luminal::cpu
