// Pt2Archive::from_memory: an exported program handed over without an archive file (the Python
// module serializes the program to JSON and passes the weights' memory).
#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "io/pt2/payload.h"
#include "io/pt2/program_json.h"
#include "luminal/pt2.h"

namespace luminal {

namespace {

[[noreturn]] void fail(const std::string& problem) {
  throw std::runtime_error("[pt2] in-memory program: " + problem);
}

// A tensor's storage must hold its strided extent (a device tensor: contiguous, no host bytes).
void check_tensor(const Pt2Tensor& t) {
  if (t.shape.size() != t.strides.size())
    fail(fmt::format("tensor '{}': {} sizes but {} strides", t.name, t.shape.size(),
                     t.strides.size()));
  int64_t numel = 1, last = t.storage_offset;
  for (size_t k = 0; k < t.shape.size(); ++k) {
    if (t.shape[k] < 0 || t.strides[k] < 0)
      fail(fmt::format("tensor '{}': negative size or stride", t.name));
    numel *= t.shape[k];
    if (t.shape[k] > 0) last += (t.shape[k] - 1) * t.strides[k];
  }
  if (t.device_data != nullptr) {
    if (!t.is_contiguous()) fail(fmt::format("tensor '{}': device data must be contiguous", t.name));
    return;
  }
  const uint64_t need = numel == 0 ? 0 : uint64_t(last + 1) * dtype_size(t.dtype);
  if (t.storage.size() < need)
    fail(fmt::format("tensor '{}': needs {} bytes, its storage holds {}", t.name, need,
                     t.storage.size()));
}

}  // namespace

Pt2Archive Pt2Archive::from_memory(std::string_view program_json, std::vector<Pt2Tensor> weights,
                                   std::vector<Pt2Tensor> constants) {
  Pt2Archive a;
  a.path_ = "(in memory)";
  a.model_ = "model";
  a.models_ = {"model"};
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(program_json.begin(), program_json.end());
  } catch (const nlohmann::json::exception& e) {
    fail(fmt::format("invalid JSON: {}", e.what()));
  }
  try {
    a.program_ = io::pt2::parse_program(j);
  } catch (const std::runtime_error& e) {
    fail(e.what());
  }
  for (auto* list : {&weights, &constants}) {
    for (const Pt2Tensor& t : *list) check_tensor(t);
    std::sort(list->begin(), list->end(),
              [](const Pt2Tensor& x, const Pt2Tensor& y) { return x.name < y.name; });
  }
  a.weights_ = std::move(weights);
  a.constants_ = std::move(constants);
  if (const std::string why = io::pt2::signature_problem(a); !why.empty()) fail(why);
  return a;
}

}  // namespace luminal
