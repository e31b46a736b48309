// The fp8 precision's GEMMs: a matmul step over a constant weight runs as row-wise e4m3
// quantization of its activations (one kernel), then a cuBLASLt e4m3 GEMM whose epilogue scales
// by the activation row's and the weight column's scales (fp32 accumulation, bf16 out, bias and
// ReLU fused). The weight is quantized per output channel once per InputSlot::version, outside the
// captured graph, so a re-uploaded weight is requantized before the next run reads it.
#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <functional>
#include <map>
#include <mutex>

#include "cuda/runtime/cuda_plan.h"
#include "cuda/runtime/fp8.h"
#include "cuda/runtime/nvrtc.h"

namespace luminal::cuda {
namespace {

// Best of 3 timings of `reps` runs of enqueue on s, in us per run.
double best_us(CUstream s, const std::function<void()>& enqueue) {
  const Driver& d = drv();
  EventHandle start, end;
  for (EventHandle* e : {&start, &end}) {
    CUevent ev = nullptr;
    CHECK_CUDA(d.cuEventCreate(&ev, CU_EVENT_DEFAULT));
    e->reset(ev);
  }
  enqueue();  // warm-up (loads cuBLASLt's kernel)
  constexpr int reps = 3;
  double best = 1e30;
  for (int trial = 0; trial < 3; ++trial) {
    CHECK_CUDA(d.cuEventRecord(start.get(), s));
    for (int r = 0; r < reps; ++r) enqueue();
    CHECK_CUDA(d.cuEventRecord(end.get(), s));
    CHECK_CUDA(d.cuEventSynchronize(end.get()));
    float ms = 0;
    CHECK_CUDA(d.cuEventElapsedTime_v2(&ms, start.get(), end.get()));
    best = std::min(best, double(ms) * 1000.0 / reps);
  }
  return best;
}

// fp8 or not, by shape: one timing per process and device, so every plan decides alike.
std::mutex& choices_mutex() {
  static std::mutex m;
  return m;
}
std::map<std::string, bool>& fp8_choices() {
  static std::map<std::string, bool> choices;
  return choices;
}

// The shape key of a timed choice.
std::string choice_key(int ordinal, const MatmulShape& s, int64_t lda) {
  return fmt::format("{} {} {} {} {} {} {}", ordinal, s.m, s.n, s.k, lda, s.bias, s.relu);
}

// The choice made for this key before, if any.
std::optional<bool> known_choice(const std::string& key) {
  std::lock_guard<std::mutex> lock(choices_mutex());
  auto it = fp8_choices().find(key);
  if (it == fp8_choices().end()) return std::nullopt;
  return it->second;
}

}  // namespace

uint64_t next_slot_version() {
  static std::atomic<uint64_t> counter{0};
  return ++counter;
}

std::optional<Op> CudaPlan::fp8_op(size_t i, const compiler::MatmulStep& m, const StepContext& c) {
  if (precision != Precision::FP8 || fp8_unsupported || m.dtype != DType::BF16) return std::nullopt;
  const compiler::PlanBuffer& wb = plan.buffers[size_t(m.b)];
  if (wb.kind != compiler::PlanBuffer::Kind::Input) return std::nullopt;
  const InputSlot& w = inputs[wb.node];
  if (w.version == 0) return std::nullopt;  // not constant: the caller's memory or per-call data
  const DynMap& dyn = c.dyn;
  const int64_t rows = m.m.eval(dyn), n = m.n.eval(dyn), k = m.k.eval(dyn);
  const int64_t lda = m.a_row.eval(dyn), a_off = m.a_offset.eval(dyn);
  // cuBLASLt's e4m3 GEMM reads both operands along k with 16-byte aligned rows.
  if (m.batch.eval(dyn) != 1 || rows < 1 || n < 16 || n % 16 != 0 || k < 16 || k % 16 != 0 ||
      m.a_col.eval(dyn) != 1 || lda % 8 != 0 || m.b_row.eval(dyn) != 1 || m.b_col.eval(dyn) != k ||
      m.b_offset.eval(dyn) != 0 || w.bytes < size_t(n * k) * 2)
    return std::nullopt;
  const CUdeviceptr a = c.ptrs[size_t(m.a)] + CUdeviceptr(a_off) * 2;
  if (a % 16 != 0 || w.ptr() % 16 != 0) return std::nullopt;

  MatmulShape s;
  s.dtype = DType::BF16;
  s.m = rows;
  s.n = n;
  s.k = k;
  s.a_row = k;  // the quantized copies are contiguous
  s.a_col = 1;
  s.b_row = 1;
  s.b_col = k;
  s.bias = m.bias >= 0;
  s.relu = m.relu;
  s.fp8 = true;
  s.algo = m.algo;
  const std::string key = choice_key(dev.ordinal, s, lda);
  if (opts.fp8_timed && known_choice(key) == false) {  // timed before: bf16 won, allocate nothing
    ++fp8_declined;
    return std::nullopt;
  }
  if (fp8_quantize_fn == nullptr)
    fp8_quantize_fn = load_kernel(fp8_quantize_source(), kFp8QuantizeEntry, 0).fn;
  if (fp8_steps.size() < plan.steps.size()) fp8_steps.resize(plan.steps.size());
  std::unique_ptr<Fp8Step>& slot = fp8_steps[i];
  if (!slot) slot = std::make_unique<Fp8Step>();
  Fp8Step& f = *slot;
  const std::string what = fmt::format("the fp8 copy of {}", labels[i]);
  if (f.n != n || f.k != k || !f.w8) {
    f.w8 = device_alloc(dev, size_t(n * k), what);
    f.w_scale = device_alloc(dev, size_t(n) * 4, what + " (scales)");
    f.n = n;
    f.k = k;
    f.version = 0;
  }
  if (!f.a8 || f.a8->capacity < size_t(rows * k)) {
    if (f.a8) sync_stream();  // queued runs may still read the old scratch
    f.a8 = device_alloc(dev, size_t(rows * k), what + " (activations)");
    f.a_scale = device_alloc(dev, size_t(rows) * 4, what + " (activation scales)");
  }
  f.weight = wb.node;
  MatmulPointers p;
  p.a = f.a8->ptr;
  p.b = f.w8->ptr;
  p.c = c.ptrs[size_t(m.c)];
  p.bias = s.bias ? c.ptrs[size_t(m.bias)] : 0;
  p.a_scale = f.a_scale->ptr;
  p.b_scale = f.w_scale->ptr;
  Op gemm;
  gemm.label = &c.label;
  try {
    gemm.matmul = std::make_unique<MatmulCall>(*blas, s, p);
  } catch (const std::runtime_error& e) {
    // No row-wise scaled e4m3 GEMM in this cuBLASLt / GPU: say so once and run bf16.
    std::fprintf(stderr, "[cuda] precision fp8: %s; matmuls run in bf16\n", e.what());
    fp8_unsupported = true;
    slot.reset();  // its copies and scratch are not needed
    return std::nullopt;
  }
  Op quantize;
  quantize.label = &c.label;
  quantize.launch = fp8_quantize_launch(fp8_quantize_fn, a, f.a8->ptr, f.a_scale->ptr, rows, k, lda);
  if (opts.fp8_timed && !fp8_wins(key, m, c, s, p, quantize)) {
    ++fp8_declined;
    slot.reset();
    return std::nullopt;
  }
  Op op;
  op.sub.push_back(std::move(quantize));
  op.sub.push_back(std::move(gemm));
  f.active = true;
  return op;
}

bool CudaPlan::fp8_wins(const std::string& key, const compiler::MatmulStep& m, const StepContext& c,
                        const MatmulShape& s, const MatmulPointers& p, const Op& quantize) {
  std::lock_guard<std::mutex> lock(choices_mutex());
  auto it = fp8_choices().find(key);
  if (it != fp8_choices().end()) return it->second;
  // Both write a scratch C: the real one may still be read by the caller (zero-copy outputs).
  const std::shared_ptr<DeviceAllocation> scratch =
      device_alloc(dev, size_t(s.m * s.n) * 2, "the fp8 timing scratch");
  std::vector<CUdeviceptr> ptrs = c.ptrs;
  ptrs[size_t(m.c)] = scratch->ptr;
  const StepContext plain_c{c.dyn, c.sm_count, ptrs, c.error_flag, c.label};
  const std::unique_ptr<MatmulCall> plain = matmul_call(m, *blas, plain_c);
  MatmulPointers fp = p;
  fp.c = scratch->ptr;
  Op fp8;  // the step as fp8_op would run it, into the scratch
  fp8.label = quantize.label;
  fp8.sub.push_back(Op{quantize.label, quantize.launch, nullptr, {}});
  fp8.sub.push_back(Op{quantize.label, std::nullopt, std::make_unique<MatmulCall>(*blas, s, fp), {}});
  point_params_at_values(fp8);
  const double bf16_us = best_us(stream, [&] { plain->run(stream); });
  const double fp8_us = best_us(stream, [&] { run_op(fp8, stream, false); });
  const bool wins = fp8_us < 0.98 * bf16_us;  // within timing noise: keep bf16's accuracy
  if (debug_level() >= 1)
    std::fprintf(stderr, "[fp8] %s: bf16 %.2f us, quantize + e4m3 %.2f us: %s\n",
                 s.to_string().c_str(), bf16_us, fp8_us, wins ? "fp8" : "bf16");
  fp8_choices().emplace(key, wins);
  return wins;
}

void CudaPlan::refresh_fp8_weights() {
  for (const std::unique_ptr<Fp8Step>& slot : fp8_steps) {
    if (!slot || !slot->active) continue;
    Fp8Step& f = *slot;
    const InputSlot& w = inputs[f.weight];
    if (w.version == f.version && w.ptr() == f.weight_src) continue;
    Launch l = fp8_quantize_launch(fp8_quantize_fn, w.ptr(), f.w8->ptr, f.w_scale->ptr, f.n, f.k, f.k);
    CHECK_CUDA_CTX(drv().cuLaunchKernel(l.fn, l.grid[0], 1, 1, l.block[0], 1, 1, 0, stream,
                                        l.params.data(), nullptr),
                   "quantizing weight " + node_label(f.weight) + " to fp8");
    f.version = w.version;
    f.weight_src = w.ptr();
    ++fp8_weight_quantizations;
  }
}

}  // namespace luminal::cuda
