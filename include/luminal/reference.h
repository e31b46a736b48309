// The CPU reference runtime: plain loops over strided views; the oracle for every other backend.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "luminal/runtime.h"

namespace luminal {

/// Executes a graph with straightforward, obviously-correct loops. Custom ops run their decomposition.
class ReferenceRuntime final : public Runtime {
 public:
  explicit ReferenceRuntime(const Graph& g);
  ~ReferenceRuntime() override;

  void execute(const DynMap& dyn = {}) override;
  /// Runs once; `consume` = false keeps every input bound (repeated runs on the same inputs).
  void execute(const DynMap& dyn, bool consume);
  std::vector<std::byte> get_bytes(const GraphTensor& t) override;
  Buffer remove_buffer(const GraphTensor& t) override;
  void set_buffer(const GraphTensor& t, Buffer b) override;
  std::vector<std::string> host_ops() const override;
  void upload(NodeId input, std::span<const std::byte> bytes, bool persist) override;
  /// True when the Input holds data.
  bool has_data(NodeId input) const;
  /// True when the Input's data survives execute() (persisted, or uploaded as persisted).
  bool persisted(NodeId input) const;
  /// True when every Input an Output depends on holds data.
  bool inputs_ready() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace luminal
