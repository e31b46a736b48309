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
  std::vector<std::byte> get_bytes(const GraphTensor& t) override;
  Buffer remove_buffer(const GraphTensor& t) override;
  void set_buffer(const GraphTensor& t, Buffer b) override;
  std::vector<std::string> host_ops() const override;

 protected:
  void upload(NodeId input, std::span<const std::byte> bytes, bool persist) override;

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace luminal
