// Building the DLRM graph and compiling it for the dlrm example.
#include "model.h"

#include <stdexcept>

#include <fmt/format.h>

namespace dlrm {

namespace {

// BF16 and TF32 need sm_80+ tensor cores (and bf16 arithmetic in the generated kernels).
void require_precision(luminal::Precision p, const luminal::Backend& target) {
  const luminal::DeviceCaps& caps = target.caps();
  if (p == luminal::Precision::FP8 && caps.cc_major * 10 + caps.cc_minor < 89)
    throw std::invalid_argument(fmt::format(
        "[dlrm] --precision fp8 needs a GPU with FP8 tensor cores (sm_89+); {} ({}) has none: "
        "use int8 or bf16 there",
        caps.name, caps.arch));
  if (p == luminal::Precision::F32 || caps.cc_major == 0 || caps.cc_major >= 8) return;
  throw std::runtime_error(fmt::format(
      "[dlrm] --precision {} needs an sm_80+ GPU (bf16/tf32 tensor cores); this one is {} ({})",
      luminal::precision_name(p), caps.name, caps.arch));
}

}  // namespace

std::unique_ptr<Model> build_model(const luminal::models::DlrmConfig& c, luminal::Target target,
                                   const std::string& device, bool mega, bool persist_inputs,
                                   const luminal::DynMap& dyn, luminal::CompileOptions options,
                                   int64_t max_batch) {
  auto m = std::make_unique<Model>();
  m->config = c;
  m->device = device;
  m->mega = mega;
  m->dyn = dyn;
  m->tensors = mega ? luminal::models::build_dlrm_mega(m->graph, c)
                    : luminal::models::build_dlrm(m->graph, c);
  if (persist_inputs) {
    m->tensors.dense_x.persist();
    for (luminal::GraphTensor& t : m->tensors.indices) t.persist();
    for (luminal::GraphTensor& t : m->tensors.offsets) t.persist();
  }
  require_precision(c.precision, *target);
  options.dim_hints = dyn;
  // bf16 / int8 are the graph's dtypes; the compile precision also sets the search's output
  // tolerance (an f32 logit of a bf16 model differs between plans by bf16 steps) and, on the CPU
  // backend, int8 GEMMs for int8.
  options.precision = c.precision;
  if (c.dynamic_batch && max_batch > 0)
    options.buckets = {c.batch_symbol, luminal::pow2_buckets(1, max_batch)};
  m->runtime = luminal::compile(m->graph, std::move(target), std::move(options));
  return m;
}

}  // namespace dlrm
