// The defaults of BackendPlan: what a backend does not support is refused by name.
#include <fmt/format.h>

#include <stdexcept>

#include "luminal/backend.h"

namespace luminal {

namespace {

[[noreturn]] void unsupported(const char* op, const BackendPlan& plan) {
  throw std::invalid_argument(
      fmt::format("[{}] not supported by this backend (a plan of {} nodes)", op, plan.graph().size()));
}

}  // namespace

bool BackendPlan::load_items(const std::vector<LoadItem>& items, const LoadOptions& opts) {
  (void)items;
  (void)opts;
  return false;
}

void BackendPlan::set_device_ptr(NodeId input, void* ptr, size_t bytes) {
  (void)input, (void)ptr, (void)bytes;
  unsupported("set_device_ptr", *this);
}

void BackendPlan::set_output_ptr(NodeId output, void* ptr, size_t bytes) {
  (void)output, (void)ptr, (void)bytes;
  unsupported("set_output_ptr", *this);
}

std::span<std::byte> BackendPlan::host_input(NodeId input, size_t bytes) {
  (void)input, (void)bytes;
  unsupported("host_input", *this);
}

}  // namespace luminal
