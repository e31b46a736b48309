// The dlrm example's subcommands: `dlrm run` (files in, check and bench) and `dlrm demo` (no
// files).
#pragma once

#include <cstdint>
#include <string>

namespace dlrm {

/// Options of `dlrm run`.
struct RunOptions {
  std::string weights, inputs;
  std::string device = "cpu";  // cpu | cuda
  bool mega = false;           // the one-node megakernel graph
  bool stats = false;          // print host_ops() and kernel_count
  bool bench = false;          // time warmup + iters calls
  int warmup = 50, iters = 500;
  std::string input_mode =
      "device";  // device: upload once (persisted); host: set_data before every execute
  double tol = 1e-5;
  std::string json;  // write results here when nonempty
};

/// Runs a model from files; returns the exit code (0 ok, 1 output differs from `expected` by more
/// than tol).
int run_command(const RunOptions& o);

/// Options of `dlrm demo`.
struct DemoOptions {
  std::string device = "auto";  // cpu | cuda | auto
  int64_t batch = 2048;
};

/// Builds a small random DLRM, runs every path, prints a comparison table; returns the exit code.
int demo_command(const DemoOptions& o);

}  // namespace dlrm
