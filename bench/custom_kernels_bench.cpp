// The custom ops' CUDA kernels alone at production shapes: device time (CUDA events around each
// execute, median) beside the memory floor (the bytes gathered once at 4.8 TB/s). Prints a table;
// never asserts. These were "tests" of the GPU suite that checked nothing; they live here now.
//   luminal_bench_kernels [--only dlrm_sparse|embedding_bag|rms_norm|cross_gemm|mlp_chain]
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "custom/cross_gemm/test_util.h"
#include "custom/dlrm_sparse/test_util.h"
#include "custom/embedding_bag/test_util.h"
#include "custom/mlp_chain/test_util.h"
#include "custom/rms_norm/test_util.h"
#include "luminal/compile.h"
#include "luminal/cuda.h"
#include "luminal/custom_op.h"

namespace luminal {
namespace {

double median(std::vector<double> us) {
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

// DlrmSparse at the Kaggle and MLPerf shapes (26 tables of 100k rows, one-hot bags).
void dlrm_sparse() {
  struct Shape {
    const char* name;
    int64_t dim;
    DType dt;
  };
  for (const Shape& sh : {Shape{"kaggle f32", 16, DType::F32}, Shape{"mlperf bf16", 128, DType::BF16},
                          Shape{"mlperf f32", 128, DType::F32}})
    for (int64_t batch : {256, 2048, 16384}) {
      const sparse_test::Case c = sparse_test::random_case(
          sparse_test::shape(batch, sh.dim, std::vector<int64_t>(26, 100'000), nn::BagMode::Sum,
                             custom::TableFormat::Dense, sh.dt),
          3, 1);
      Graph g;
      sparse_test::Bound b = sparse_test::build_for(g, c, true);
      for (GraphTensor& t : b.in) t.persist();
      Executable rt(g, cuda::backend());
      sparse_test::set_inputs(rt, b, c);
      const double us = median(rt.execute_timed(sparse_test::dyn_of(c), 50));
      double rows = 0;
      for (const auto& idx : c.indices) rows += double(idx.size());
      const double bytes = rows * double(sh.dim * int64_t(dtype_size(sh.dt)));
      fmt::print("dlrm_sparse    {:<12} batch {:>6}: {:8.2f} us (gather floor {:.2f} us)\n", sh.name,
                 batch, us, bytes / 4.8e6);
    }
}

// EmbeddingBag over a 100k x 128 table, one-hot and jagged bags of up to 40 rows.
void embedding_bag() {
  for (DType dt : {DType::F32, DType::BF16})
    for (int max_bag : {1, 40})
      for (int64_t batch : {2048, 16384}) {
        const bag_test::Case c =
            bag_test::random_case(100'000, 128, batch, nn::BagMode::Sum, dt, DType::I64, 3, max_bag);
        Graph g;
        bag_test::Bound b = bag_test::build_for(g, c, true);
        b.table.persist(), b.indices.persist(), b.offsets.persist();
        Executable rt(g, cuda::backend());
        bag_test::set_inputs(rt, b, c);
        const double us = median(rt.execute_timed(bag_test::dyn_of(c), 50));
        const double bytes = double(c.indices.size()) * double(128 * dtype_size(dt));
        fmt::print("embedding_bag  {} d 128 bags <= {:>2} batch {:>6}: {:8.2f} us (floor {:.2f} us)\n",
                   dtype_name(dt), max_bag, batch, us, bytes / 4.8e6);
      }
}

// RmsNorm at Llama-3.2-1B's shapes (D 2048, decode and a 512-token prefill).
void rms_norm() {
  for (int64_t rows : {1, 512}) {
    const norm_test::Case c = norm_test::random_case(rows, 2048, DType::BF16, 5);
    Graph g;
    norm_test::Bound b = norm_test::build(g, c, true);
    b.x.persist(), b.w.persist();
    Executable rt(g, cuda::backend());
    norm_test::set_inputs(rt, b, c);
    fmt::print("rms_norm       bf16 rows {:>4} D 2048: {:7.2f} us\n", rows,
               median(rt.execute_timed({}, 100)));
  }
}

// CrossGemm at DLRM-v2's cross layer (n 3456, rank 512, bf16): each core the device has beside the
// decomposition it replaces (the GEMM library's kernel, then the elementwise kernel), with the H200's
// floor: x0, xl and out once through DRAM, or the GEMM's FLOPs at the dense bf16 rate, whichever is longer.
void cross_gemm() {
  for (int64_t batch : {270, 2048, 16384}) {
    const cross_gemm_test::Case c = cross_gemm_test::random_case(batch, 3456, 512, DType::BF16, 9);
    const double bytes = 3.0 * double(batch * c.n) * 2, flops = 2.0 * double(batch * c.n * c.k);
    const double floor_us = std::max(bytes / 4.8e6, flops / 989e6);
    for (const char* variant : {"wgmma", "wgmma o3", "wgmma o4", "wgmma m64", "mma.sync", "decomposed"}) {
      const std::string v = variant;
      Graph g;
      cross_gemm_test::Bound b;
      b.u = g.named_tensor("u", {c.m, c.k}, c.dt), b.w = g.named_tensor("w", {c.n, c.k}, c.dt);
      b.b = g.named_tensor("b", {c.n}, c.dt);
      b.x0 = g.named_tensor("x0", {c.m, c.n}, c.dt), b.xl = g.named_tensor("xl", {c.m, c.n}, c.dt);
      custom::CrossGemmShape shape{c.n, c.k, c.dt, v != "mma.sync"};  // "o3" / "o4": overlapped stages
      shape.overlap = v == "wgmma o3" || v == "wgmma o4", shape.stages = v == "wgmma o4" ? 4 : 3;
      shape.tile_m = v == "wgmma m64" ? 64 : 128;  // "m64": 64-row tiles
      auto op = std::make_shared<custom::CrossGemm>(shape);
      const std::vector<GraphTensor> in = {b.u, b.w, b.b, b.x0, b.xl};
      // The decomposition is the op's own reference graph: the default plan runs it unfused.
      b.out = v == "decomposed" ? op->decompose(g, in) : custom_op(op, in);
      for (GraphTensor* t : {&b.u, &b.w, &b.b, &b.x0, &b.xl}) t->persist();
      b.out.output();
      CompileOptions options;
      options.search.enabled = false;  // a search could fuse the decomposition (the cross_layer rule)
      Executable rt(g, cuda::backend(), options);
      cross_gemm_test::set_inputs(rt, b, c);
      const double us = median(rt.execute_timed({}, 50));
      fmt::print("cross_gemm     bf16 n 3456 k 512 batch {:>6} {:<10}: {:8.2f} us ({:.0f} TFLOP/s; floor {:.2f} us), "
                 "{} kernels\n", batch, variant, us, flops / us / 1e6, floor_us, rt.stats().kernels);
    }
  }
}

// MlpChain at DLRM-v2's dense tail (3 cross layers of rank 512 over 3456, then the top MLP
// 1024-1024-512-256-1) and its top MLP alone, bf16, 64- and 32-row tiles, beside the decomposition
// (per-layer cuBLASLt GEMMs with fused bias / ReLU, elementwise cross steps: the default plan), with
// the H200's floor: the weights once through DRAM or the FLOPs at the dense bf16 rate.
void mlp_chain() {
  const auto [tail_w, tail_e] = mlp_chain_test::cross_then_top(3456, 3, 512, {1024, 1024, 512, 256, 1});
  const auto top_e = mlp_chain_test::relus({true, true, true, true, false});
  struct Chain {
    const char* name;
    std::vector<int64_t> widths;
    std::vector<custom::ChainEpilogue> epi;
  };
  for (const Chain& ch : {Chain{"dense tail", tail_w, tail_e}, Chain{"top MLP", {1024, 1024, 512, 256, 1}, top_e}})
    for (int64_t batch : {270, 2048, 16384}) {
      const mlp_chain_test::Case c = mlp_chain_test::random_chain_case(batch, 3456, ch.widths, ch.epi, DType::BF16, 9);
      double weights = 0, flops = 0;
      int64_t in = c.k;
      for (int64_t n : c.widths) weights += double(n * in) * 2, flops += 2.0 * double(batch * n * in), in = n;
      const double floor_us = std::max(weights / 4.8e6, flops / 989e6);
      for (const char* variant : {"chain", "chain m32", "decomposed"}) {
        const std::string v = variant;
        Graph g;
        mlp_chain_test::Bound b = mlp_chain_test::build(g, c, /*dynamic=*/false, /*chain=*/v != "decomposed",
                                                        v == "chain m32" ? 32 : 64);
        b.x.persist();
        for (auto& w : b.w) w.persist();
        for (auto& bias : b.b)
          if (bias) bias->persist();
        CompileOptions options;
        options.search.enabled = false;  // the rule would offer the chain to a search
        Executable rt(g, cuda::backend(), options);
        mlp_chain_test::set_inputs(rt, b, c);
        const double us = median(rt.execute_timed({}, 50));
        fmt::print("mlp_chain      bf16 {:<10} batch {:>6} {:<10}: {:8.2f} us ({:.0f} TFLOP/s; floor {:.2f} us), {} kernels\n",
                   ch.name, batch, variant, us, flops / us / 1e6, floor_us, rt.stats().kernels);
      }
    }
}

}  // namespace
}  // namespace luminal

int main(int argc, char** argv) {
  const std::string only = argc == 3 && std::string(argv[1]) == "--only" ? argv[2] : "";
  if (!luminal::cuda::available()) {
    std::fprintf(stderr, "luminal_bench_kernels: no CUDA device: %s\n",
                 luminal::cuda::device_description().c_str());
    return 1;
  }
  std::printf("device: %s\n", luminal::cuda::device_description().c_str());
  if (only.empty() || only == "dlrm_sparse") luminal::dlrm_sparse();
  if (only.empty() || only == "embedding_bag") luminal::embedding_bag();
  if (only.empty() || only == "rms_norm") luminal::rms_norm();
  if (only.empty() || only == "cross_gemm") luminal::cross_gemm();
  if (only.empty() || only == "mlp_chain") luminal::mlp_chain();
  return 0;
}
