// Runtime overhead: Executable::execute() (CUDA) on plans of 1, 8 and 32 small kernels against a raw
// CUDA graph (and raw launches) of the very same cubins, in one process. Inputs are device
// resident (set_device_ptr). Prints a table, writes JSON with --json FILE; never asserts timings.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "cuda/codegen/kernels.h"
#include "compiler/kernel_plan.h"
#include "cuda/runtime/device.h"
#include "cuda/runtime/device_memory.h"
#include "cuda/runtime/handles.h"
#include "cuda/runtime/jit_cache.h"
#include "cuda/runtime/memory.h"
#include "luminal/compile.h"
#include "luminal/cuda.h"

namespace {

using namespace luminal;
using Clock = std::chrono::steady_clock;

constexpr int64_t kElems = 4096;  // 16 KB per tensor: launch-bound kernels

struct Stats {
  double mean = 0, p50 = 0, p99 = 0, min = 0;
};

Stats summarize(std::vector<double> us) {
  Stats s;
  if (us.empty()) return s;
  std::sort(us.begin(), us.end());
  for (double v : us) s.mean += v;
  s.mean /= double(us.size());
  s.p50 = us[us.size() / 2];
  s.p99 = us[std::min(us.size() - 1, size_t(double(us.size()) * 0.99))];
  s.min = us.front();
  return s;
}

double since_us(Clock::time_point t0) {
  return std::chrono::duration<double, std::micro>(Clock::now() - t0).count();
}

// Latency: one call then a sync, timed on the host clock, per call.
Stats time_latency(int warmup, int iters, const std::function<void()>& call,
                   const std::function<void()>& sync) {
  for (int i = 0; i < warmup; ++i) {
    call();
    sync();
  }
  std::vector<double> us;
  us.reserve(size_t(iters));
  for (int i = 0; i < iters; ++i) {
    const Clock::time_point t0 = Clock::now();
    call();
    sync();
    us.push_back(since_us(t0));
  }
  return summarize(us);
}

// Host cost of the call alone: batches of 50 calls without a sync, amortized per call.
Stats time_host_only(int iters, const std::function<void()>& call,
                     const std::function<void()>& sync) {
  std::vector<double> us;
  for (int done = 0; done < iters; done += 50) {
    const Clock::time_point t0 = Clock::now();
    for (int i = 0; i < 50; ++i) call();
    us.push_back(since_us(t0) / 50.0);
    sync();  // keep the queue short so launches never block on a full queue
  }
  return summarize(us);
}

// n independent small elementwise outputs y_i = x * a_i + b_i: one kernel each.
struct Workload {
  Graph g;
  GraphTensor x;
  std::vector<GraphTensor> ys;
  explicit Workload(int n) {
    x = g.named_tensor("x", {kElems});
    for (int i = 0; i < n; ++i) ys.push_back((x * (1.0 + 0.01 * i) + 0.5 * i).output());
  }
};

// The plan's kernels launched straight through the driver: the floor the runtime competes with.
class RawKernels {
 public:
  explicit RawKernels(const Graph& g) : dev_(cuda::device_info(0)), plan_(cuda::codegen::lower_and_render(g)) {
    dev_.make_current();
    CUstream s = nullptr;
    CHECK_CUDA(cuda::drv().cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    stream_.reset(s);
    flag_ = cuda::device_alloc(dev_, 4, "error flag");
    CHECK_CUDA(cuda::drv().cuMemsetD8Async(flag_->ptr, 0, 4, s));
    const std::string target = cuda::nvrtc_target(dev_.cc_major, dev_.cc_minor);
    for (const compiler::PlanBuffer& b : plan_.buffers) {
      bufs_.push_back(
          cuda::device_alloc(dev_, size_t(b.numel.eval({})) * dtype_size(b.dtype), "raw buffer"));
      // 0x3f bytes: finite values (0.746f), so the raw kernels compute on ordinary numbers.
      CHECK_CUDA(cuda::drv().cuMemsetD8Async(bufs_.back()->ptr, 0x3f, bufs_.back()->capacity, s));
    }
    for (const compiler::Step& st : plan_.steps) {
      const auto* k = std::get_if<compiler::KernelStep>(&st);
      if (k == nullptr) {
        supported_ = false;
        return;
      }
      const cuda::DeviceImage img = cuda::JitCache::global().get(k->source, k->name, target);
      CUmodule m = nullptr;
      CHECK_CUDA(cuda::drv().cuModuleLoadData(&m, img.bytes.data()));
      modules_.emplace_back(m);
      Launch l;
      CHECK_CUDA(cuda::drv().cuModuleGetFunction(&l.fn, m, k->name.c_str()));
      l.grid = unsigned((k->threads.eval({}) + k->block - 1) / k->block);
      l.block = k->block;
      l.shared = k->shared_bytes;
      for (const compiler::KernelArg& a : k->args) {
        if (a.kind == compiler::KernelArg::Kind::Buffer)
          l.values.push_back(bufs_[size_t(a.buffer)]->ptr);
        if (a.kind == compiler::KernelArg::Kind::ErrorFlag) l.values.push_back(flag_->ptr);
        if (a.kind == compiler::KernelArg::Kind::Dim)
          l.values.push_back(0);  // the workload is static
      }
      launches_.push_back(std::move(l));
    }
    for (Launch& l : launches_)
      for (unsigned long long& v : l.values) l.params.push_back(&v);
    CHECK_CUDA(cuda::drv().cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL));
    launch_direct();
    CUgraph graph = nullptr;
    CHECK_CUDA(cuda::drv().cuStreamEndCapture(s, &graph));
    cuda::GraphHandle owner(graph);
    CUgraphExec exec = nullptr;
    CHECK_CUDA(cuda::drv().cuGraphInstantiateWithFlags(&exec, graph, 0));
    exec_.reset(exec);
  }
  bool supported() const { return supported_; }
  void launch_direct() {
    for (Launch& l : launches_)
      CHECK_CUDA(cuda::drv().cuLaunchKernel(l.fn, l.grid, 1, 1, l.block, 1, 1, l.shared,
                                            stream_.get(), l.params.data(), nullptr));
  }
  void launch_graph() { CHECK_CUDA(cuda::drv().cuGraphLaunch(exec_.get(), stream_.get())); }
  void sync() { CHECK_CUDA(cuda::drv().cuStreamSynchronize(stream_.get())); }

 private:
  struct Launch {
    CUfunction fn = nullptr;
    unsigned grid = 1, block = 1, shared = 0;
    std::vector<unsigned long long> values;
    std::vector<void*> params;
  };
  const cuda::DeviceInfo& dev_;
  compiler::KernelPlan plan_;
  cuda::StreamHandle stream_;
  std::shared_ptr<cuda::DeviceAllocation> flag_;
  std::vector<std::shared_ptr<cuda::DeviceAllocation>> bufs_;
  std::vector<cuda::ModuleHandle> modules_;
  std::vector<Launch> launches_;
  cuda::GraphExecHandle exec_;
  bool supported_ = true;
};

struct Row {
  std::string name;
  Stats s;
};

struct Result {
  int requested = 0;
  size_t kernels = 0;
  bool outputs_ok = false;
  std::vector<Row> rows;
};

Result run_size(int n, int warmup, int iters) {
  Workload w(n);
  Result r;
  r.requested = n;
  std::vector<float> xs(kElems);
  for (int64_t i = 0; i < kElems; ++i) xs[size_t(i)] = float(i % 97) * 0.125f - 3.0f;
  cuda::DeviceMemory xmem(kElems * 4);
  xmem.upload(xs.data(), kElems * 4);

  cuda::CudaOptions nograph;
  nograph.cuda_graph = false;
  Executable rt(w.g, cuda::backend()), rt_nograph(w.g, cuda::backend(nograph));
  r.kernels = rt.kernel_count();
  for (Executable* x : {&rt, &rt_nograph}) x->set_device_ptr(w.x, xmem.get(), kElems * 4);
  auto exec = [&] { rt.execute(); };
  auto sync = [&] { rt.synchronize(); };
  r.rows.push_back({"luminal execute+sync (graph)", time_latency(warmup, iters, exec, sync)});
  r.rows.push_back(
      {"luminal execute+sync (no graph)",
       time_latency(
           warmup, iters, [&] { rt_nograph.execute(); }, [&] { rt_nograph.synchronize(); })});
  r.rows.push_back({"luminal execute host only", time_host_only(iters, exec, sync)});
  // The results are right (checked once, outside the timing).
  r.outputs_ok = true;
  for (int i = 0; i < n; ++i) {
    const std::vector<float> y = rt.get_f32(w.ys[size_t(i)]);
    for (int64_t j = 0; j < kElems; j += 101) {
      const float want = xs[size_t(j)] * float(1.0 + 0.01 * i) + float(0.5 * i);
      if (std::abs(y[size_t(j)] - want) > 1e-4f * (1.0f + std::abs(want))) r.outputs_ok = false;
    }
  }
  RawKernels raw(w.g);
  if (raw.supported()) {
    r.rows.push_back({"raw CUDA graph launch+sync",
                      time_latency(
                          warmup, iters, [&] { raw.launch_graph(); }, [&] { raw.sync(); })});
    r.rows.push_back({"raw cuLaunchKernel xN + sync",
                      time_latency(
                          warmup, iters, [&] { raw.launch_direct(); }, [&] { raw.sync(); })});
    r.rows.push_back({"raw graph launch host only",
                      time_host_only(
                          iters, [&] { raw.launch_graph(); }, [&] { raw.sync(); })});
  }
  return r;
}

std::string to_json(const std::vector<Result>& results, int iters, int warmup) {
  std::string j = fmt::format("{{\n  \"benchmark\": \"runtime_overhead\",\n  \"device\": \"{}\",\n",
                              cuda::device_description());
  j += fmt::format("  \"iters\": {},\n  \"warmup\": {},\n  \"elements\": {},\n", iters, warmup,
                   kElems);
  j += "  \"inputs\": \"device-resident (set_device_ptr)\",\n  \"clock\": \"host steady_clock per "
       "call\",\n  \"results\": [\n";
  for (size_t i = 0; i < results.size(); ++i) {
    const Result& r = results[i];
    j += fmt::format(
        "    {{\"kernels_requested\": {}, \"kernel_count\": {}, \"outputs_ok\": {}, \"rows\": [\n",
        r.requested, r.kernels, r.outputs_ok);
    for (size_t k = 0; k < r.rows.size(); ++k) {
      const Stats& s = r.rows[k].s;
      j += fmt::format(
          "      {{\"name\": \"{}\", \"mean_us\": {:.3f}, \"p50_us\": {:.3f}, \"p99_us\": {:.3f}, "
          "\"min_us\": {:.3f}}}{}\n",
          r.rows[k].name, s.mean, s.p50, s.p99, s.min, k + 1 < r.rows.size() ? "," : "");
    }
    j += fmt::format("    ]}}{}\n", i + 1 < results.size() ? "," : "");
  }
  return j + "  ]\n}\n";
}

}  // namespace

int run_main(int argc, char** argv) {
  int iters = 2000, warmup = 200;
  std::string json;
  std::vector<int> sizes = {1, 8, 32};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument("[bench] " + a + " needs a value");
      return argv[++i];
    };
    if (a == "--json")
      json = next();
    else if (a == "--iters")
      iters = std::stoi(next());
    else if (a == "--warmup")
      warmup = std::stoi(next());
    else if (a == "--help") {
      std::printf("usage: luminal_bench_overhead [--iters N] [--warmup N] [--json FILE]\n");
      return 0;
    } else {
      std::fprintf(stderr, "[bench] unknown argument %s\n", a.c_str());
      return 2;
    }
  }
  if (!cuda::available()) {
    std::printf("runtime_overhead: skipped, no CUDA device (%s)\n",
                cuda::device_description().c_str());
    return 0;
  }
  std::vector<Result> results;
  for (int n : sizes) results.push_back(run_size(n, warmup, iters));

  std::printf("runtime overhead on %s, %d iterations after %d warm-up, device-resident inputs\n",
              cuda::device_description().c_str(), iters, warmup);
  std::printf("%-8s %-8s %-34s %10s %10s %10s %10s\n", "kernels", "ok", "what", "mean us", "p50 us",
              "p99 us", "min us");
  for (const Result& r : results)
    for (const Row& row : r.rows)
      std::printf("%-8zu %-8s %-34s %10.2f %10.2f %10.2f %10.2f\n", r.kernels,
                  r.outputs_ok ? "yes" : "NO", row.name.c_str(), row.s.mean, row.s.p50, row.s.p99,
                  row.s.min);
  if (!json.empty()) {
    std::ofstream f(json);
    f << to_json(results, iters, warmup);
    if (!f) {
      std::fprintf(stderr, "[bench] cannot write %s\n", json.c_str());
      return 1;
    }
  }
  return 0;
}

int main(int argc, char** argv) {
  try {
    return run_main(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "runtime_overhead failed: %s\n", e.what());
    return 1;
  }
}
