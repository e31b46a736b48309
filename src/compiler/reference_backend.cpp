// The CPU reference runtime as a compile target: the oracle runs what the user wrote (the rules'
// alternatives only when one is named, through their decompositions), is not searched, and times
// a run with the host clock.
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <thread>

#include "luminal/compile.h"
#include "luminal/reference.h"

namespace luminal {
namespace {

// What take_input moves between two reference plans: the input's bytes and persistence.
struct MovedHostInput {
  Buffer buffer;
  bool persist = false;
};

class ReferencePlan final : public BackendPlan {
 public:
  explicit ReferencePlan(const Graph& g) : graph_(g), rt_(g) {}

  const Graph& graph() const override { return graph_; }
  void upload(NodeId input, std::span<const std::byte> bytes, bool persist) override {
    rt_.upload(input, bytes, persist);
  }
  std::vector<std::byte> get_bytes(NodeId node) override { return rt_.get_bytes(tensor(node)); }
  Buffer remove_buffer(NodeId node) override { return rt_.remove_buffer(tensor(node)); }
  void set_buffer(NodeId input, Buffer b) override { rt_.set_buffer(tensor(input), std::move(b)); }

  BoundInput take_input(NodeId input) override {
    if (!rt_.has_data(input)) return {};
    auto moved = std::make_shared<MovedHostInput>();
    moved->persist = rt_.persisted(input);
    moved->buffer = rt_.remove_buffer(tensor(input));
    return BoundInput{std::move(moved)};
  }

  void give_input(NodeId input, BoundInput b) override {
    if (!b) return;
    const auto moved = std::static_pointer_cast<MovedHostInput>(b.data);
    const std::vector<std::byte> bytes = bytes_of(moved->buffer);
    rt_.upload(input, bytes, moved->persist);
  }

  bool inputs_ready() const override { return rt_.inputs_ready(); }
  void set_device_ptr(NodeId input, void* ptr, size_t bytes) override {
    (void)ptr, (void)bytes;
    throw std::invalid_argument(fmt::format(
        "[set_device_ptr] input {}: the reference backend computes in host memory (set_data); "
        "device pointers need a device backend such as cuda",
        graph_.node(input).name));
  }
  void set_output_ptr(NodeId output, void* ptr, size_t bytes) override {
    (void)output, (void)ptr, (void)bytes;
    throw std::invalid_argument(
        "[set_output_ptr] the reference backend keeps outputs in host memory (get_bytes); "
        "external output memory needs a device backend such as cuda");
  }
  void execute(const DynMap& dyn, bool consume) override { rt_.execute(dyn, consume); }

  double time_us(const DynMap& dyn, int warmup, int trials) override {
    for (int i = 0; i < warmup; ++i) rt_.execute(dyn, false);
    std::vector<double> us;
    for (int i = 0; i < std::max(trials, 1); ++i) us.push_back(timed_run(dyn, false));
    std::sort(us.begin(), us.end());
    return us[us.size() / 2];
  }

  std::vector<double> execute_timed(const DynMap& dyn, int iterations) override {
    std::vector<double> us;
    for (int i = 0; i < iterations; ++i) us.push_back(timed_run(dyn, true));
    return us;
  }

  uint64_t memory_bytes() const override { return 0; }  // intermediates live only during a run

  PlanStats stats() const override {
    PlanStats s;
    s.steps = rt_.host_ops();
    s.kernels = s.steps.size();
    return s;
  }

 private:
  GraphTensor tensor(NodeId n) const { return GraphTensor(const_cast<Graph*>(&graph_), n); }
  static std::vector<std::byte> bytes_of(const Buffer& b) {
    const auto* v = static_cast<const std::vector<std::byte>*>(b.impl.get());
    return std::vector<std::byte>(v->begin(), v->begin() + std::ptrdiff_t(b.bytes));
  }
  double timed_run(const DynMap& dyn, bool consume) {
    const auto t0 = std::chrono::steady_clock::now();
    rt_.execute(dyn, consume);
    return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
  }

  const Graph& graph_;
  ReferenceRuntime rt_;
};

class ReferenceBackend final : public Backend {
 public:
  ReferenceBackend() {
    caps_.name = "CPU reference";
    caps_.arch = "host";
    caps_.sm_count = int(std::max(1u, std::thread::hardware_concurrency()));
  }
  std::string kind() const override { return "reference"; }
  std::string description() const override { return "reference"; }
  const DeviceCaps& caps() const override { return caps_; }
  // TF32 (a tensor-core matmul mode) runs exact here: the oracle's f32 is never rounded.
  std::unique_ptr<BackendPlan> build(const BuildRequest& request) const override {
    return std::make_unique<ReferencePlan>(request.graph);
  }
  bool has_kernel(std::string_view op) const override {
    (void)op;
    return false;  // custom ops run their decompositions here
  }
  bool searchable() const override { return false; }
  std::string default_alternative() const override { return "none"; }

 private:
  DeviceCaps caps_;
};

}  // namespace

Target reference_backend() {
  static const Target backend = std::make_shared<ReferenceBackend>();
  return backend;
}

}  // namespace luminal
