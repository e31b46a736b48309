// dlrm: runs a DLRM (facebookresearch/dlrm DLRM_Net, dot interaction) exported by export.py on the
// CPU reference runtime or the CUDA runtime, through the graph path or the megakernel.
//
//   dlrm run --weights W --inputs I [--device cpu|cuda] [--precision fp32|tf32|tf32x3|bf16|int8|fp8]
//            [--sparse auto|split|fused|graph] [--mega] [--stats] [--bench] [--json FILE]
//            [--no-search] [--search-budget N] [--search-seconds S] [--research] [--candidate C]
//   dlrm demo [--device cpu|cuda|auto] [--batch 2048]
//   dlrm shard --preset dlrm-v2 | --weights W --gpus N --gpu-memory GB [--precision bf16] [--row-scale K]
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "luminal/environment.h"

int main(int argc, char** argv) {
  CLI::App app{"DLRM inference with luminal-cpp"};
  app.require_subcommand(1);

  // The documented environment variables first (docs/options.md); the flags below override them.
  dlrm::RunOptions ro;
  try {
    luminal::apply_process_environment();
    luminal::apply_environment(ro.compile);
    luminal::apply_environment(ro.cuda);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  CLI::App* run =
      app.add_subcommand("run", "Run weights + inputs written by examples/dlrm/export.py");
  run->add_option("--weights", ro.weights, "weights.safetensors (PyTorch or torchrec state_dict names)");
  run->add_option("--inputs", ro.inputs,
                  "inputs.safetensors (dense_x, indices_k, offsets_k, expected; or dense_features, "
                  "values_<key>, lengths_<key>)");
  run->add_option("--synthetic", ro.synthetic,
                  "Generate --preset's weights and inputs from this seed instead of files (no files "
                  "for MLPerf's 52-104 GB of tables); small models are checked against the CPU reference")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--preset", ro.preset, "With --synthetic: dlrm-v2 (MLPerf's DLRM-v2) or dlrm-v2-small")
      ->check(CLI::IsMember({"dlrm-v2", "dlrm-v2-small"}));
  run->add_option("--max-rows", ro.max_rows, "With --synthetic: cap every table at N rows")->check(CLI::PositiveNumber);
  run->add_option("--batch", ro.batch, "With --synthetic: samples per call")->check(CLI::PositiveNumber);
  run->add_option("--dist", ro.dist, "With --synthetic: rows drawn uniform or powerlaw (hot rows, as export.py's)")
      ->check(CLI::IsMember({"uniform", "powerlaw"}));
  run->add_option("--alpha", ro.alpha, "With --dist powerlaw: P(rank r) ~ r^-alpha")->check(CLI::PositiveNumber);
  run->add_option("--device", ro.device,
                  "auto (cuda when a GPU is present), cpu, reference, cuda or cuda:N");
  // Checked by luminal::parse_precision, so an unknown name gets the library's error (exit 2).
  run->add_option(
      "--precision", ro.precision,
      "fp32 (exact) | tf32 (CUDA f32 matmuls on TF32 tensor cores; the CPU stays exact) | "
      "bf16 (bf16 weights/activations, fp32 accumulation) | int8 (row-wise uint8 tables "
      "quantized at load; MLPs in bf16 on CUDA, int8 GEMMs on the CPU backend where it has AMX / "
      "VNNI int8 kernels: weights per column, activations per tensor, bf16 between layers) | "
      "fp8 (CUDA sm_89+: int8 tables and the GEMMs over constant weights on e4m3 tensor cores, "
      "weights per output channel, activations per row, bf16 between layers)");
  run->add_option(
         "--sparse", ro.sparse,
         "Sparse path: fused (one DlrmSparse / BagConcat kernel after the bottom MLP), split (a bags "
         "kernel beside the bottom MLP, then one for x and its pairs (DLRM-v1; slower on the H200) "
         "or x0's concat (DLRM-v2)), graph "
         "(ordinary ops) or auto (fp32/tf32: ordinary ops, which the DLRM rule offers as the "
         "megakernel or the fused kernels; bf16/int8: fused where the target has the kernel)")
      ->check(CLI::IsMember({"auto", "split", "fused", "graph"}));
  run->add_flag("--mega", ro.mega,
                "Use the DLRM megakernel (falls back to the graph path when it does not fit)");
  run->add_flag("--stats", ro.stats,
                "Print the plan: precision, sparse path, bags, host ops and kernel count");
  run->add_flag("--profile", ro.cpu.profile,
                "CPU backend: time every step; --stats then prints each step's mean time");
  run->add_flag("--fp8-everywhere", [&ro](int64_t) { ro.cuda.fp8_timed = false; },
                "With --precision fp8 on CUDA: every GEMM that qualifies runs e4m3, not only those "
                "that time faster than bf16 (CudaOptions::fp8_timed)");
  run->add_flag("--no-packed-weights", [&ro](int64_t) { ro.cpu.packed_weight_bytes = 0; },
                "CPU backend: matmuls read the weights as bound instead of a copy packed once into "
                "oneDNN's blocked layout (for comparisons)");
  run->add_flag("--no-search", [&ro](int64_t) { ro.compile.search.enabled = false; },
                "Run the default plan (the rules' first available alternative, unmeasured)");
  run->add_option("--search-budget", ro.compile.search.max_candidates,
                  "Candidates the search evaluates at most")
      ->check(CLI::PositiveNumber);
  run->add_option("--search-seconds", ro.compile.search.time_budget_s,
                  "No new candidate is started after this many seconds")
      ->check(CLI::PositiveNumber);
  run->add_option("--search-seed", ro.compile.search.seed, "The genetic search's seed");
  run->add_flag("--research", ro.compile.search.force,
                "Search even when the plan cache has this model (and overwrite the entry)");
  run->add_option("--candidate", ro.compile.candidate,
                  "Run this plan (key=option,... as --stats prints it), no search");
  run->add_option("--alternative", ro.compile.alternative,
                  "What the rewrite rules may apply: auto (searched), none (the graph as built), "
                  "mega, fused_sparse")
      ->check(CLI::IsMember({"auto", "none", "decomposed", "mega", "fused_sparse"}));
  run->add_option("--take-batch", ro.take_batch,
                  "Run only the first N samples of the inputs file (a model compiled for N)")
      ->check(CLI::PositiveNumber);
  run->add_option("--max-batch", ro.max_batch,
                  "Compile one model with a dynamic batch that serves any batch up to N (CUDA: "
                  "one searched plan per power-of-two bucket)")
      ->check(CLI::PositiveNumber);
  run->add_option("--bench-batches", ro.bench_batches,
                  "With --max-batch: check and time the same model at each of these batches "
                  "(the first N samples of the inputs), e.g. 1,64,2048")
      ->delimiter(',')
      ->check(CLI::PositiveNumber);
  run->add_flag("--bench", ro.bench, "Time the model (events, latency, pipelined)");
  run->add_option("--warmup", ro.warmup, "Warm-up calls before timing")
      ->check(CLI::NonNegativeNumber);
  run->add_option("--iters", ro.iters, "Timed calls")->check(CLI::PositiveNumber);
  run->add_option("--input-mode", ro.input_mode,
                  "device: upload inputs once; host: set_data before every call; pinned (CUDA): "
                  "inputs written once into the runtime's pinned staging (host_input), re-bound and "
                  "uploaded with one copy every call")
      ->check(CLI::IsMember({"device", "host", "pinned"}));
  run->add_option("--tol", ro.tol,
                  "Max abs diff vs 'expected' before exiting 1 (default per precision: fp32 1e-5, "
                  "tf32 2e-3, bf16 1e-2, int8 2e-2)");
  run->add_option("--min-spearman", ro.min_spearman,
                  "Min Spearman rank correlation vs 'expected' before exiting 1");
  run->add_option("--json", ro.json, "Write results as JSON (bench/bench.py reads it)");

  dlrm::DemoOptions dopt;
  CLI::App* demo = app.add_subcommand(
      "demo", "Random seed-shaped DLRM, no files: every path vs the CPU reference");
  demo->add_option("--device", dopt.device, "auto, cpu, reference, cuda or cuda:N");
  demo->add_option("--batch", dopt.batch, "Batch size")->check(CLI::PositiveNumber);

  dlrm::ShardOptions sopt;
  CLI::App* shard = app.add_subcommand(
      "shard", "Where the tables would go over N GPUs (table-, row-, column-wise): the sharding plan, a dry run");
  shard->add_option("--preset", sopt.preset, "dlrm-v2 (MLPerf's tables and multi-hot sizes) or dlrm-v2-small");
  shard->add_option("--weights", sopt.weights, "A weights file: its tables' shapes");
  shard->add_option("--gpus", sopt.gpus, "Number of GPUs")->required()->check(CLI::PositiveNumber);
  shard->add_option("--gpu-memory", sopt.gpu_memory_gb, "Free memory per GPU, GB (e.g. 139 for an H200)")->required();
  shard->add_option("--reserve", sopt.reserve_gb, "GB per GPU kept for activations and workspace (default 4)");
  shard->add_option("--precision", sopt.precision, "The tables' storage: fp32, bf16 (default) or int8");
  shard->add_option("--row-scale", sopt.row_scale, "Every table's rows times K")->check(CLI::PositiveNumber);
  shard->add_option("--pooling", sopt.pooling, "Lookups per sample per table (default: the preset's multi-hot sizes)")
      ->delimiter(',');
  shard->add_option("--inputs", sopt.inputs, "Or measure each table's lookups per sample in an inputs file");

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;  // --help is 0; usage errors share the exit code of bad input
  }
  try {
    if (shard->parsed()) return dlrm::shard_command(sopt);
    return run->parsed() ? dlrm::run_command(ro) : dlrm::demo_command(dopt);
  } catch (const std::exception& e) {
    std::fflush(stdout);
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
}
