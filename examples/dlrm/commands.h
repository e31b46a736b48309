// The dlrm example's subcommands: `dlrm run` (files in, check and bench) and `dlrm demo` (no
// files).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "luminal/compile.h"
#include "luminal/cpu.h"
#include "luminal/cuda.h"

namespace dlrm {

/// Options of `dlrm run`.
struct RunOptions {
  std::string weights, inputs;
  std::string device = "auto";  // a device name (luminal/devices.h): cpu, reference, cuda, auto
  bool mega = false;           // the one-node megakernel graph
  bool stats = false;          // print host_ops() and kernel_count
  bool bench = false;          // time warmup + iters calls
  int warmup = 50, iters = 500;
  std::string input_mode =
      "device";  // device: upload once (persisted); host: set_data before every execute
  std::string precision = "fp32";  // fp32 | tf32 | bf16 | int8 (parse_precision)
  std::string sparse = "auto";     // auto (choose_sparse_path) | fused | graph
  double tol = -1;                 // max abs diff vs expected; < 0: default_tol(precision)
  double min_spearman = 0.99;      // rank correlation vs expected
  std::string json;                // write results here when nonempty
  // The environment's (luminal/environment.h), then --no-search, --search-budget,
  // --search-seconds, --research, --candidate, --alternative.
  luminal::CompileOptions compile;
  luminal::cuda::CudaOptions cuda;  // the environment's (LUMINAL_GRAPH_BRANCHES, LUMINAL_GEMV_*, ...)
  luminal::cpu::CpuOptions cpu;     // --profile
  int64_t take_batch = 0;          // > 0: run the first this many samples of the inputs file
  // > 0: the batch is a dynamic dim; CUDA serves 1..max_batch from dim buckets (one plan each).
  int64_t max_batch = 0;
  std::vector<int64_t> bench_batches;  // with max_batch: check and time these batches (prefixes)
  // --synthetic SEED (>= 0): weights and inputs of --preset generated from SEED, --batch samples.
  int64_t synthetic = -1;
  std::string preset;     // dlrm-v2 | dlrm-v2-small
  int64_t max_rows = 0;   // > 0: cap every table
  std::string dist = "uniform";  // synthetic rows: uniform | powerlaw (Zipf-like hot rows)
  double alpha = 1.05;           // powerlaw: P(rank r) ~ r^-alpha
  int64_t batch = 0;
};

/// Runs a model from files; returns the exit code (0 ok, 1 output differs from `expected` by more
/// than tol or ranks them with Spearman below min_spearman).
int run_command(const RunOptions& o);

/// Options of `dlrm demo`.
struct DemoOptions {
  std::string device = "auto";  // a device name: cpu, reference, cuda, auto
  int64_t batch = 2048;
};

/// Builds a small random DLRM, runs every path, prints a comparison table; returns the exit code.
int demo_command(const DemoOptions& o);

/// Options of `dlrm shard`.
struct ShardOptions {
  std::string preset, weights;     // the tables: a DLRM-v2 preset, or a weights file's table shapes
  std::string precision = "bf16";  // the tables' storage: fp32 | bf16 | int8
  int gpus = 0;
  double gpu_memory_gb = 0;        // per GPU
  double reserve_gb = 4;           // per GPU, besides the dense weights: activations, workspace
  int64_t row_scale = 1;           // every table's rows times this (larger-than-MLPerf models)
  std::vector<int64_t> pooling;    // lookups per sample per table (default: the preset's multi-hot sizes, else 1)
  std::string inputs;              // or measured: the mean bag length per table in this inputs file
};

/// Prints where the tables would go over o.gpus GPUs (throws "[shard] ..." when they do not fit).
int shard_command(const ShardOptions& o);

}  // namespace dlrm
